"""Choosing how a request runs: plain, or checkpointed (pausable) under a lease."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from lgos.core.capabilities import check_demands
from lgos.core.client_settings import SETTINGS_KEY, SETTINGS_PARAM
from lgos.core.errors import InterruptConflictError, InvalidRequestError
from lgos.core.registry import GraphConfig, GraphFeature, GraphRegistry
from lgos.core.request import GraphRequest
from lgos.core.run_events import Finished, Interrupted, RunEvent
from lgos.run.interrupts import Resume, run_checkpointed
from lgos.run.runner import run_graph
from lgos.wire import ids
from lgos.wire.interrupts import parse_interrupt_call_id

if TYPE_CHECKING:  # a worker runs a job without the decoder
    from lgos.wire.decoding import DecodedRequest


def graph_request(config: GraphConfig, decoded: DecodedRequest[Any]) -> GraphRequest:
    """The protocol-neutral request; validates `metadata.lgos_settings` against the graph."""
    body = decoded.body
    model, metadata = body.model, decoded.metadata
    check_demands(model, config, decoded.demands)
    raw_settings = metadata.get(SETTINGS_KEY)
    if config.client_settings is not None:
        settings = config.client_settings.from_metadata(raw_settings)
    elif raw_settings is not None:
        raise InvalidRequestError(
            f"Invalid '{SETTINGS_PARAM}': the model '{model}' has no client settings.",
            param=SETTINGS_PARAM,
            code="invalid_value",
        )
    else:
        settings = None
    return GraphRequest(
        model=model,
        messages=decoded.messages,
        metadata={key: value for key, value in metadata.items() if key != SETTINGS_KEY},
        user=body.user,
        tools=decoded.tools,
        tool_choice=decoded.tool_choice,
        parallel_tool_calls=body.parallel_tool_calls is not False,
        settings=settings,
        response_format=decoded.response_format,
        hosted_tools=decoded.hosted_tools,
        reasoning=decoded.reasoning,
        truncation=decoded.truncation,
    )


@dataclass(frozen=True, slots=True)
class RunPlan:
    """Where a request's run lives: `run_id` is set for pausable graphs."""

    run_id: str | None
    resume: Resume | None
    # A thread-keeping graph in a stored conversation: the thread outlives the run, and a new
    # turn starts from `checkpoint_id` (None: the latest).
    keep_thread: bool = False
    checkpoint_id: str | None = None


# The plan of most requests (a graph that never pauses, no thread kept): frozen, so shared
# rather than built for every request.
_PLAIN_RUN = RunPlan(run_id=None, resume=None)


def plan_run(
    config: GraphConfig,
    *,
    answers: Mapping[str, str] | None,
    answer_params: Mapping[str, str] | None = None,
    previous_run_id: str | None = None,
    run_id: str | None = None,
    checkpoint_id: str | None = None,
    keep_thread: bool = False,
) -> RunPlan:
    """Decide the run id and decode interrupt answers (call id → output) into a `Resume`.

    `run_id` is the thread of a thread-keeping graph's conversation (or a background job's
    run); None starts a new one.
    """
    pausable = config.checkpointed
    keep = keep_thread and config.keeps_thread
    if answers is None:
        if not (pausable or keep):
            return _PLAIN_RUN
        return RunPlan(
            run_id=(run_id or ids.new_hex()) if pausable else None,
            resume=None,
            keep_thread=keep,
            checkpoint_id=checkpoint_id if keep else None,
        )
    if not config.supports(GraphFeature.INTERRUPTS):
        raise InvalidRequestError(
            "This model never pauses for review, so there is nothing to answer.",
            param="input",
            code="invalid_value",
        )
    runs: set[str] = set()
    by_interrupt: dict[str, str] = {}
    params: dict[str, str] = {}
    for call_id, output in answers.items():
        parsed = parse_interrupt_call_id(call_id)
        if parsed is None:
            raise InterruptConflictError(f"'{call_id}' is not a question this server asked.")
        runs.add(parsed[0])
        by_interrupt[parsed[1]] = output
        if answer_params and call_id in answer_params:
            params[parsed[1]] = answer_params[call_id]
    if len(runs) != 1 or (previous_run_id is not None and runs != {previous_run_id}):
        raise InterruptConflictError(
            "The answers do not belong to the paused Response named by previous_response_id."
        )
    return RunPlan(run_id=runs.pop(), resume=Resume(by_interrupt, params), keep_thread=keep)


def run_events(
    registry: GraphRegistry,
    config: GraphConfig,
    request: GraphRequest,
    plan: RunPlan,
    *,
    scope: str,
    streaming: bool,
    continue_existing: bool = False,
    turn_id: str | None = None,
) -> AsyncIterator[RunEvent]:
    if plan.run_id is None:
        return run_graph(config, request, streaming=streaming)
    assert registry.run_coordinator is not None  # the registry checks this at construction
    return run_checkpointed(
        config,
        request,
        registry.run_coordinator,
        scope=scope,
        run_id=plan.run_id,
        streaming=streaming,
        resume=plan.resume,
        continue_existing=continue_existing,
        checkpoint_id=plan.checkpoint_id,
        turn_id=turn_id,
        keep_thread=plan.keep_thread,
    )


class PeekedEvents:
    """Waits for a run's first event before the HTTP status is committed, so errors found
    while taking the lease or validating an answer are real 4xx responses. If the graph is
    slow to produce anything, the stream starts anyway after `patience` seconds (so keep-alive
    pings can flow) and the first event arrives in-stream."""

    __slots__ = ("_events", "_first", "_pending")

    def __init__(self, events: AsyncIterator[RunEvent]) -> None:
        self._events = events
        self._first: RunEvent | None = None
        self._pending: asyncio.Task[RunEvent] | None = None

    async def peek(self, patience: float) -> None:
        task = asyncio.ensure_future(anext(self._events))
        done, _ = await asyncio.wait({task}, timeout=patience)
        if done:
            self._first = task.result()  # raises the run's error, before any byte is sent
        else:
            self._pending = task

    async def __aiter__(self) -> AsyncIterator[RunEvent]:
        try:
            if self._pending is not None:
                self._first = await self._pending
                self._pending = None
            if self._first is not None:
                yield self._first
            async for event in self._events:
                yield event
        finally:
            if self._pending is not None:
                self._pending.cancel()
            await self._events.aclose()  # type: ignore[attr-defined]

    async def aclose(self) -> None:
        if self._pending is not None:
            self._pending.cancel()
        await self._events.aclose()  # type: ignore[attr-defined]


async def start_stream(events: AsyncIterator[RunEvent], patience: float) -> PeekedEvents:
    """Start a run for streaming: its request errors raise here, before any byte is sent."""
    peeked = PeekedEvents(events)
    try:
        await peeked.peek(patience)
    except BaseException:
        await peeked.aclose()
        raise
    return peeked


async def run_to_end(events: AsyncIterator[RunEvent]) -> Finished | Interrupted:
    """Drive a run to its terminal event (the non-streaming path)."""
    try:
        async for event in events:
            if isinstance(event, Finished | Interrupted):
                return event
    finally:
        await events.aclose()  # type: ignore[attr-defined]
    raise RuntimeError("the run ended without a terminal event")
