"""The Responses API: one request from decoded body to a Response object or stream events."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import AsyncGenerator, AsyncIterable, AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from lgos.core.errors import InvalidRequestError, LgosError, is_transient_database_error
from lgos.core.job import JobEcho, JobPlan, JobRequest, PreparedJob
from lgos.core.records import per_request
from lgos.core.registry import GraphConfig, GraphRegistry
from lgos.core.request import GraphRequest
from lgos.core.run_events import (
    Commentary,
    Finished,
    Interrupted,
    ReasoningDelta,
    RunEvent,
    TextDelta,
)
from lgos.core.structured_output import AnswerFormatError
from lgos.run.interrupts import Resume
from lgos.service.runs import (
    RunPlan,
    graph_request,
    plan_run,
    run_events,
    run_to_end,
    start_stream,
)
from lgos.wire import ids
from lgos.wire.error_envelope import SERVER_ERROR_MESSAGE
from lgos.wire.responses_encoder import (
    ResponseEcho,
    ResponsesStream,
    echo_format,
    echo_reasoning,
    failure,
    final_output,
    interrupt_items,
)
from lgos.wire.types.events import StreamEvent
from lgos.wire.types.items import StoredItem
from lgos.wire.types.responses import OutputItem, ReasoningConfig, ResponseObject, TextFormat

if TYPE_CHECKING:  # a worker runs a job without the decoder (tests/background/test_job.py)
    from lgos.wire.responses_decoder import DecodedResponsesRequest

logger = logging.getLogger("lgos.responses")


@dataclass(frozen=True, slots=True)
class Turn:
    """Where a request sits in a stored conversation (resolved by `service.stateful`)."""

    store: bool = False
    # Earlier turns' input and output items, before this request's input.
    history: tuple[StoredItem, ...] = ()
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


@per_request
class PreparedResponse:
    """A validated Responses request, ready to run here, or to store as a job (`to_job`) for
    a background worker, which runs it as it is."""

    config: GraphConfig
    plan: RunPlan
    echo: ResponseEcho
    request: GraphRequest
    # The decoded request and its place in a stored conversation, for the API's own use
    # (recording the turn); a worker's request, read from its job, has neither.
    decoded: DecodedResponsesRequest | None = None
    turn: Turn = STATELESS

    @property
    def model(self) -> str:
        return self.request.model

    def with_response_id(self, response_id: str) -> PreparedResponse:
        """The same request answered under another id (a background run's, once submitted)."""
        return dataclasses.replace(self, echo=dataclasses.replace(self.echo, id=response_id))

    def to_job(self) -> PreparedJob:
        """This request as JSON, for an engine to store. Built on demand: a foreground
        request runs in this process and never needs it. Nothing is validated again."""
        return PreparedJob.model_construct(
            echo=_job_echo(self.echo),
            request=JobRequest.of(self.request),
            plan=_job_plan(self.plan),
        )


def prepare(
    registry: GraphRegistry,
    decoded: DecodedResponsesRequest,
    *,
    response_id: str | None = None,
    run_id: str | None = None,
    turn: Turn = STATELESS,
) -> PreparedResponse:
    """Everything that can be checked before running: model, settings, answers. Done once:
    a background worker runs the resulting job (`to_job`) as it is."""
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
        answer_params=decoded.answer_params,
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
    echo = response_echo(decoded, response_id, store=turn.store)
    return PreparedResponse(config, plan, echo, request, decoded, turn)


def from_job(
    registry: GraphRegistry, job: PreparedJob, *, response_id: str, run_id: str | None
) -> PreparedResponse:
    """A stored job, ready to run in a worker. Nothing is decoded or checked again; the
    client settings' values become the graph's settings model again. `run_id` names the
    checkpoint thread when the worker checkpoints a graph the API would have run without."""
    config = registry.get(job.request.model)
    answers = job.plan.answers
    plan = RunPlan(
        run_id=job.plan.run_id or (run_id if config.checkpointed else None),
        resume=Resume(answers, job.plan.answer_params) if answers is not None else None,
        keep_thread=job.plan.keep_thread,
        checkpoint_id=job.plan.checkpoint_id,
    )
    request = job.request.graph_request(config.client_settings)
    return PreparedResponse(config, plan, job_echo(job.echo, response_id), request)


def job_echo(echo: JobEcho, response_id: str) -> ResponseEcho:
    """What a job's Response echoes, under its public id."""
    fields = dict(echo)
    # JSON this module wrote from a `TextFormat` and a `ReasoningConfig` (`_job_echo`).
    fields["text_format"] = cast(TextFormat, echo.text_format)
    fields["reasoning"] = cast(ReasoningConfig | None, echo.reasoning)
    return ResponseEcho(id=response_id, **fields)


def _job_echo(echo: ResponseEcho) -> JobEcho:
    return JobEcho.model_construct(
        model=echo.model,
        instructions=echo.instructions,
        metadata=dict(echo.metadata),
        tools=echo.tools,
        tool_choice=echo.tool_choice,
        parallel_tool_calls=echo.parallel_tool_calls,
        previous_response_id=echo.previous_response_id,
        background=echo.background,
        store=echo.store,
        user=echo.user,
        conversation=echo.conversation,
        text_format=echo.text_format,
        reasoning=echo.reasoning,
        truncation="auto" if echo.truncation == "auto" else "disabled",
        created_at=echo.created_at,
    )


def _job_plan(plan: RunPlan) -> JobPlan:
    resume = plan.resume
    return JobPlan.model_construct(
        run_id=plan.run_id,
        answers=dict(resume.answers) if resume is not None else None,
        answer_params=dict(resume.params) if resume is not None else {},
        keep_thread=plan.keep_thread,
        checkpoint_id=plan.checkpoint_id,
    )


def response_echo(
    decoded: DecodedResponsesRequest, response_id: str, *, store: bool | None = None
) -> ResponseEcho:
    body = decoded.body
    if store is None:  # a background Response is always kept
        store = decoded.background or body.store is not False
    return ResponseEcho(
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
        text_format=echo_format(decoded.response_format),
        reasoning=echo_reasoning(decoded.reasoning),
        truncation=body.truncation or "disabled",
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
        turn_id=prepared.echo.id,
    )


async def create(
    registry: GraphRegistry,
    prepared: PreparedResponse,
    *,
    scope: str,
    continue_existing: bool = False,
) -> ResponseObject:
    """Run to the end and return the Response object (the non-streaming path)."""
    response, _ = await run(registry, prepared, scope=scope, continue_existing=continue_existing)
    return response


async def run(
    registry: GraphRegistry,
    prepared: PreparedResponse,
    *,
    scope: str,
    continue_existing: bool = False,
) -> tuple[ResponseObject, str | None]:
    """The Response object, and the checkpoint a thread-keeping graph's run ended on."""
    events = _events(
        registry, prepared, scope=scope, streaming=False, continue_existing=continue_existing
    )
    try:
        event = await run_to_end(events)
    except AnswerFormatError as error:
        # The graph's fault, said in the Response (as OpenAI reports a failed run), not a 5xx.
        return prepared.echo.snapshot("failed", error=failure(error.message)), None
    output: list[OutputItem] = (
        final_output(event, summary=prepared.echo.reasoning_summary)
        if isinstance(event, Finished)
        else [*interrupt_items(event)]
    )
    return prepared.echo.snapshot("completed", output, usage=event.usage), event.checkpoint_id


# Called when a stream ends: every event sent, and the checkpoint a kept thread ended on.
StreamEnd = Callable[[list[StreamEvent], str | None], Awaitable[None]]


async def open_stream(
    registry: GraphRegistry,
    prepared: PreparedResponse,
    *,
    scope: str,
    patience: float,
    on_end: StreamEnd | None = None,
) -> AsyncGenerator[StreamEvent]:
    """Start the run; raise request errors now, then return the stream events."""
    events = await start_stream(_events(registry, prepared, scope=scope, streaming=True), patience)
    return _stream_events(prepared, events, on_end)


async def _stream_events(
    prepared: PreparedResponse, events: AsyncIterable[RunEvent], on_end: StreamEnd | None
) -> AsyncGenerator[StreamEvent]:
    stream = ResponsesStream(prepared.echo)
    # What a stored stream keeps: every event sent, and where a kept thread ended.
    sent: list[StreamEvent] | None = [] if on_end is not None else None
    ended_on: list[str | None] = [None]

    async def watched() -> AsyncIterator[RunEvent]:
        async for event in events:
            if isinstance(event, Finished | Interrupted):
                ended_on[0] = event.checkpoint_id
            yield event

    for event in stream.start():
        if sent is not None:
            sent.append(event)
        yield event
    async with aclosing(event_batches(prepared, watched(), stream)) as batches:
        async for batch in batches:
            if sent is not None:
                sent.extend(batch)
            for event in batch:
                yield event
    if on_end is not None and sent is not None:
        await on_end(sent, ended_on[0])


def stream_run(
    registry: GraphRegistry,
    prepared: PreparedResponse,
    stream: ResponsesStream,
    *,
    scope: str,
    continue_existing: bool = False,
    raise_transient: bool = False,
) -> AsyncGenerator[list[StreamEvent]]:
    """Run with streaming and encode into `stream`, one list of stream events per run event
    (the streamed background path: the caller sends the stream's first events itself).
    `raise_transient` lets a lost database connection propagate, for a caller that retries
    the run from its checkpoint, instead of ending the stream as failed."""
    events = _events(
        registry, prepared, scope=scope, streaming=True, continue_existing=continue_existing
    )
    return event_batches(prepared, events, stream, raise_transient=raise_transient)


async def event_batches(
    prepared: PreparedResponse,
    events: AsyncIterable[RunEvent],
    stream: ResponsesStream,
    *,
    raise_transient: bool = False,
) -> AsyncGenerator[list[StreamEvent]]:
    """The stream events of each run event; a failing run ends with `error` and
    `response.failed`."""
    try:
        async for event in events:
            encoded = _encode(stream, event)
            if encoded:
                yield encoded
    except LgosError as error:
        yield stream.failed(
            error.message, error.code or "invalid_request", client_error=error.status_code < 500
        )
    except Exception as error:
        if raise_transient and is_transient_database_error(error):
            raise
        logger.exception("responses.stream_failed", extra={"model": prepared.model})
        yield stream.failed(SERVER_ERROR_MESSAGE)


def _encode(stream: ResponsesStream, event: RunEvent) -> list[StreamEvent]:
    if type(event) is TextDelta:
        return stream.text_delta(event.text)
    if isinstance(event, ReasoningDelta):
        return stream.reasoning_delta(event.text)
    if isinstance(event, Commentary):
        return stream.commentary(event)
    if isinstance(event, Finished):
        return stream.finished(event)
    if isinstance(event, Interrupted):
        return stream.interrupted(event)
    return []
