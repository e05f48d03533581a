"""The Chat Completions API: decoded body to a completion object or chunk stream."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator
from typing import Any

from lgos.core.errors import LgosError
from lgos.core.registry import GraphRegistry
from lgos.core.run_events import Finished, Interrupted, RunEvent, TextDelta
from lgos.service.runs import graph_request, plan_run, run_events, run_to_end, start_stream
from lgos.wire.chat_decoder import DecodedChatRequest
from lgos.wire.chat_encoder import ChatEncoder
from lgos.wire.sse import DONE, data_event

logger = logging.getLogger("lgos.chat")


def _events(
    registry: GraphRegistry, decoded: DecodedChatRequest, *, scope: str, streaming: bool
) -> AsyncIterator[RunEvent]:
    config = registry.get(decoded.body.model)
    plan = plan_run(config, answers=decoded.answers, answer_params=decoded.answer_params)
    request = graph_request(config, decoded)
    return run_events(registry, config, request, plan, scope=scope, streaming=streaming)


async def create(
    registry: GraphRegistry, decoded: DecodedChatRequest, *, scope: str
) -> dict[str, Any]:
    event = await run_to_end(_events(registry, decoded, scope=scope, streaming=False))
    return ChatEncoder(decoded.body.model).completion(event)


async def open_stream(
    registry: GraphRegistry, decoded: DecodedChatRequest, *, scope: str, patience: float
) -> AsyncGenerator[bytes]:
    events = await start_stream(_events(registry, decoded, scope=scope, streaming=True), patience)
    encoder = ChatEncoder(decoded.body.model, include_usage=decoded.include_usage)
    return _frames(decoded, encoder, events)


async def _frames(
    decoded: DecodedChatRequest, encoder: ChatEncoder, events: AsyncIterable[RunEvent]
) -> AsyncGenerator[bytes]:
    yield data_event(encoder.start())
    try:
        async for event in events:
            if type(event) is TextDelta:
                yield data_event(encoder.text_delta(event.text))
            elif isinstance(event, Finished | Interrupted):
                for chunk in encoder.end(event):
                    yield data_event(chunk)
    except LgosError as error:
        yield data_event(encoder.error(error.message))
    except Exception:
        logger.exception("chat_completion.stream_failed", extra={"model": decoded.body.model})
        yield data_event(encoder.error())
    yield DONE
