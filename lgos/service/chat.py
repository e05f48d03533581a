"""The Chat Completions API: decoded body to a completion object or chunk stream (the chunks
as dicts: HTTP frames them)."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator

from lgos.core.errors import LgosError
from lgos.core.registry import GraphRegistry
from lgos.core.run_events import Finished, Interrupted, RunEvent, TextDelta
from lgos.service.runs import graph_request, plan_run, run_events, run_to_end, start_stream
from lgos.wire.chat_decoder import DecodedChatRequest
from lgos.wire.chat_encoder import ChatEncoder, completion
from lgos.wire.types.chat import ChatCompletion, ChatStreamItem

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
) -> ChatCompletion:
    event = await run_to_end(_events(registry, decoded, scope=scope, streaming=False))
    return completion(decoded.body.model, event)


async def open_stream(
    registry: GraphRegistry, decoded: DecodedChatRequest, *, scope: str, patience: float
) -> AsyncGenerator[ChatStreamItem]:
    events = await start_stream(_events(registry, decoded, scope=scope, streaming=True), patience)
    encoder = ChatEncoder(decoded.body.model, include_usage=decoded.include_usage)
    return _chunks(decoded, encoder, events)


async def _chunks(
    decoded: DecodedChatRequest, encoder: ChatEncoder, events: AsyncIterable[RunEvent]
) -> AsyncGenerator[ChatStreamItem]:
    yield encoder.start()
    try:
        async for event in events:
            if type(event) is TextDelta:
                yield encoder.text_delta(event.text)
            elif isinstance(event, Finished | Interrupted):
                for chunk in encoder.end(event):
                    yield chunk
    except LgosError as error:
        yield encoder.error(error.message)
    except Exception:
        logger.exception("chat_completion.stream_failed", extra={"model": decoded.body.model})
        yield encoder.error()
