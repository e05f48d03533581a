"""The Chat Completions API: decoded body to a completion object or chunk stream."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from typing import Any

from lgos.errors import LgosError
from lgos.registry import GraphRegistry
from lgos.run.events import Finished, Interrupted, TextDelta
from lgos.service.execution import (
    PeekedEvents,
    graph_request,
    plan_run,
    run_events,
    run_to_end,
    start_stream,
)
from lgos.wire.chat import ChatEncoder, DecodedChatRequest
from lgos.wire.sse import DONE

logger = logging.getLogger("lgos.chat")


def _events(
    registry: GraphRegistry, decoded: DecodedChatRequest, *, scope: str, streaming: bool
) -> Any:
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
) -> AsyncIterator[bytes]:
    events = await start_stream(_events(registry, decoded, scope=scope, streaming=True), patience)
    encoder = ChatEncoder(decoded.body.model, include_usage=decoded.include_usage)
    return _frames(decoded, encoder, events)


async def _frames(
    decoded: DecodedChatRequest, encoder: ChatEncoder, events: PeekedEvents
) -> AsyncIterator[bytes]:
    yield encoder.start()
    try:
        async for event in events:
            if type(event) is TextDelta:
                yield encoder.text_delta(event.text)
            elif isinstance(event, Finished | Interrupted):
                for frame in encoder.end(event):
                    yield frame
    except LgosError as error:
        yield encoder.error(error.message)
    except Exception:
        logger.exception("chat_completion.stream_failed", extra={"model": decoded.body.model})
        yield encoder.error()
    yield DONE
