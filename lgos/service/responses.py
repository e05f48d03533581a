"""The Responses API: one request from decoded body to a Response object or SSE frames."""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import Any

from lgos.errors import InvalidRequestError, LgosError
from lgos.registry import GraphConfig, GraphRegistry
from lgos.run.events import Commentary, Finished, Interrupted, RunEvent, TextDelta
from lgos.run.request import GraphRequest
from lgos.service.execution import (
    PeekedEvents,
    RunPlan,
    graph_request,
    plan_run,
    run_events,
    run_to_end,
    start_stream,
)
from lgos.wire import ids
from lgos.wire.errors import SERVER_ERROR_MESSAGE
from lgos.wire.responses import (
    ResponseContext,
    ResponsesStream,
    final_output,
    interrupt_items,
)
from lgos.wire.responses_request import DecodedResponsesRequest

logger = logging.getLogger("lgos.responses")


@dataclass(frozen=True, slots=True)
class Turn:
    """Where a request sits in a stored conversation (resolved by `service.stateful`)."""

    store: bool = False
    # Earlier turns' input and output items, before this request's input.
    history: tuple[dict[str, Any], ...] = ()
    conversation_id: str | None = None
    # A thread-keeping graph: the run id naming the conversation's thread (None: a new one)
    # and the checkpoint its previous turn ended on.
    thread_run_id: str | None = None
    checkpoint_id: str | None = None
    # The history items from here on are sent to the graph as messages (the rest its thread
    # has seen); recorded so a background worker decodes the turn the same way.
    replay_from: int = 0

    @property
    def keeps_thread(self) -> bool:
        """A thread is worth keeping when a later turn can find it."""
        return self.store or self.conversation_id is not None


STATELESS = Turn()


@dataclass(frozen=True, slots=True)
class PreparedResponse:
    """A validated Responses request, ready to run here or in a background worker."""

    decoded: DecodedResponsesRequest
    config: GraphConfig
    plan: RunPlan
    context: ResponseContext
    request: GraphRequest
    turn: Turn = STATELESS

    @property
    def model(self) -> str:
        return self.decoded.body.model


def prepare(
    registry: GraphRegistry,
    decoded: DecodedResponsesRequest,
    *,
    response_id: str | None = None,
    run_id: str | None = None,
    turn: Turn = STATELESS,
) -> PreparedResponse:
    """Everything that can be checked before running: model, settings, answers."""
    body = decoded.body
    config = registry.get(body.model)
    previous = ids.parse_run_response_id(body.previous_response_id or "")
    if decoded.answers is not None and body.previous_response_id is not None and previous is None:
        raise InvalidRequestError(
            f"Previous response with id '{body.previous_response_id}' not found.",
            param="previous_response_id",
            code="previous_response_not_found",
        )
    plan = plan_run(
        config,
        answers=decoded.answers,
        previous_run_id=previous.run_id if previous and decoded.answers is not None else None,
        run_id=run_id or turn.thread_run_id,
        checkpoint_id=turn.checkpoint_id,
        keep_thread=turn.keeps_thread,
    )
    # Validates lgos_settings now, so a bad setting is a 400 and never a failed run.
    request = graph_request(config, decoded)
    if response_id is None:
        response_id = (
            str(ids.run_response_id(plan.run_id)) if plan.run_id is not None else ids.response_id()
        )
    context = response_context(decoded, response_id, store=turn.store)
    return PreparedResponse(decoded, config, plan, context, request, turn)


def response_context(
    decoded: DecodedResponsesRequest, response_id: str, *, store: bool | None = None
) -> ResponseContext:
    body = decoded.body
    if store is None:  # a background Response is always kept
        store = decoded.background or body.store is not False
    return ResponseContext(
        id=response_id,
        model=body.model,
        instructions=body.instructions,
        metadata=decoded.metadata,
        tools=decoded.echo_tools(),
        tool_choice=decoded.echo_tool_choice(),
        parallel_tool_calls=True if body.parallel_tool_calls is None else body.parallel_tool_calls,
        previous_response_id=body.previous_response_id,
        background=decoded.background,
        store=store,
        user=body.user,
        conversation=decoded.conversation_id,
    )


def _events(
    registry: GraphRegistry,
    prepared: PreparedResponse,
    *,
    scope: str,
    streaming: bool,
    continue_existing: bool = False,
) -> AsyncIterator[RunEvent]:
    return run_events(
        registry,
        prepared.config,
        prepared.request,
        prepared.plan,
        scope=scope,
        streaming=streaming,
        continue_existing=continue_existing,
        turn_id=prepared.context.id,
    )


async def create(
    registry: GraphRegistry,
    prepared: PreparedResponse,
    *,
    scope: str,
    continue_existing: bool = False,
) -> dict[str, Any]:
    """Run to the end and return the Response object (the non-streaming path)."""
    response, _ = await run(registry, prepared, scope=scope, continue_existing=continue_existing)
    return response


async def run(
    registry: GraphRegistry,
    prepared: PreparedResponse,
    *,
    scope: str,
    continue_existing: bool = False,
) -> tuple[dict[str, Any], str | None]:
    """The Response object, and the checkpoint a thread-keeping graph's run ended on."""
    events = _events(
        registry, prepared, scope=scope, streaming=False, continue_existing=continue_existing
    )
    event = await run_to_end(events)
    if isinstance(event, Finished):
        output = final_output(event)
        usage = event.usage
    else:
        output, usage = interrupt_items(event), None
    return prepared.context.snapshot("completed", output, usage=usage), event.checkpoint_id


# Called when a stream ends: every frame sent, and the checkpoint a kept thread ended on.
StreamEnd = Callable[[list[bytes], str | None], Awaitable[None]]


async def open_stream(
    registry: GraphRegistry,
    prepared: PreparedResponse,
    *,
    scope: str,
    patience: float,
    on_end: StreamEnd | None = None,
) -> AsyncIterator[bytes]:
    """Start the run; raise request errors now, then return the SSE frames."""
    events = _events(registry, prepared, scope=scope, streaming=True)
    return _frames(prepared, await start_stream(events, patience), on_end)


async def _frames(
    prepared: PreparedResponse, events: PeekedEvents, on_end: StreamEnd | None
) -> AsyncIterator[bytes]:
    stream = ResponsesStream(prepared.context)
    sent: list[bytes] | None = [] if on_end is not None else None
    ended_on: list[str | None] = [None]

    async def watched() -> AsyncIterator[RunEvent]:
        async for event in events:
            if isinstance(event, Finished | Interrupted):
                ended_on[0] = event.checkpoint_id
            yield event

    for frame in stream.start():
        if sent is not None:
            sent.append(frame)
        yield frame
    async with aclosing(frame_batches(prepared, watched(), stream)) as batches:
        async for batch in batches:
            if sent is not None:
                sent.extend(batch)
            for frame in batch:
                yield frame
    if on_end is not None and sent is not None:
        await on_end(sent, ended_on[0])


def stream_run(
    registry: GraphRegistry,
    prepared: PreparedResponse,
    stream: ResponsesStream,
    *,
    scope: str,
    continue_existing: bool = False,
) -> AsyncGenerator[list[bytes]]:
    """Run with streaming and encode into `stream`, one list of frames per run event (the
    streamed background path: the caller sends the stream's first events itself)."""
    events = _events(
        registry, prepared, scope=scope, streaming=True, continue_existing=continue_existing
    )
    return frame_batches(prepared, events, stream)


async def frame_batches(
    prepared: PreparedResponse, events: AsyncIterable[RunEvent], stream: ResponsesStream
) -> AsyncGenerator[list[bytes]]:
    """The frames of each run event; a failing run ends with `error` and `response.failed`."""
    try:
        async for event in events:
            frames = _encode(stream, event)
            if frames:
                yield frames
    except LgosError as error:
        yield stream.failed(error.message, error.code or "invalid_request")
    except Exception:
        logger.exception("responses.stream_failed", extra={"model": prepared.model})
        yield stream.failed(SERVER_ERROR_MESSAGE)


def _encode(stream: ResponsesStream, event: RunEvent) -> list[bytes]:
    if type(event) is TextDelta:
        return stream.text_delta(event.text)
    if isinstance(event, Commentary):
        return stream.commentary(event)
    if isinstance(event, Finished):
        return stream.finished(event)
    if isinstance(event, Interrupted):
        return stream.interrupted(event)
    return []
