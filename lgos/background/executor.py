"""What a worker does with a job: exactly the foreground Responses path, on the request the
API prepared (the job holds it; nothing here decodes or prepares a request)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langgraph.pregel import Pregel
from opentelemetry import context as otel_context
from opentelemetry import propagate

from lgos.core import log_fields
from lgos.core.background import (
    FIRST_WORKER_SEQUENCE,
    LEGACY_JOB_MESSAGE,
    TERMINAL_EVENT_FOR_STATUS,
    TERMINAL_EVENTS,
    BackgroundJob,
    ResponseEventLog,
)
from lgos.core.coordinator import RunCoordinator
from lgos.core.errors import LgosError, RunBusyError, is_transient_database_error
from lgos.core.job import PreparedJob
from lgos.core.registry import CompiledGraph, GraphConfig, GraphFeature, GraphRegistry
from lgos.run.interrupts import checkpoint_thread_id, has_work_left
from lgos.service import responses
from lgos.wire import ids
from lgos.wire.responses_encoder import ResponsesStream, failure
from lgos.wire.types.events import ResponseLifecycleEvent, StreamEvent, as_events
from lgos.wire.types.responses import ResponseObject, as_response

logger = logging.getLogger("lgos.background")

# A run that loses its database connection (a restart, a failover) is tried again from its
# last checkpoint after these pauses, about a minute in all, before its Response fails. A run
# found busy is tried again the same way: the holder may be a stuck worker whose sessions
# the reaper has just ended, and its lease goes with them.
RETRY_DELAYS_SECONDS = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0)
# The end of a run that an earlier execution started but whose checkpoint is gone (it ended
# without logging its end, or its checkpoint expired): running it again from the start would
# repeat every side effect of the nodes that had finished.
RUN_LOST_MESSAGE = (
    "This background response was started earlier and its progress is gone, so it was not "
    "run again from the start. Create the response again."
)


class DurableRuns:
    """Runs every background job checkpointed, so a job whose worker died is continued by
    another worker from its last finished step instead of from scratch.

    Graphs that declare INTERRUPTS already carry the shared checkpointer; the others are
    copied with `checkpointer` (their checkpoint is deleted when the run ends, as for any
    finished interrupt run). Built once per worker and reused for every job.
    """

    def __init__(self, checkpointer: Any, run_coordinator: RunCoordinator) -> None:
        self.checkpointer = checkpointer
        self.run_coordinator = run_coordinator
        self._registries: dict[int, GraphRegistry] = {}

    def registry(self, registry: GraphRegistry) -> GraphRegistry:
        derived = self._registries.get(id(registry))
        if derived is None:
            derived = GraphRegistry(
                graphs={model: self._config(config) for model, config in registry.graphs.items()},
                run_coordinator=registry.run_coordinator or self.run_coordinator,
            )
            self._registries[id(registry)] = derived
        return derived

    def _config(self, config: GraphConfig) -> GraphConfig:
        if not config.supports(GraphFeature.BACKGROUND):
            return config
        graph = config.graph
        if isinstance(graph, Pregel):
            durable: Any = self._durable(graph)
        else:

            async def durable(original: GraphConfig = config) -> CompiledGraph:
                return self._durable(await original.resolve_graph())

        # "sync" commits each step's checkpoint before the next step starts, so a worker killed
        # in the middle of a node loses that node only, never a node that already finished.
        return dataclasses.replace(
            config,
            graph=durable,
            features=config.features | {GraphFeature.INTERRUPTS},
            durability="sync",
        )

    def _durable(self, graph: CompiledGraph) -> CompiledGraph:
        if graph.checkpointer in (None, False):
            graph = graph.copy({"checkpointer": self.checkpointer})
        return graph


def _prepared(
    job: BackgroundJob, engine_run_id: str, registry: GraphRegistry
) -> responses.PreparedResponse | None:
    """The job's prepared request; None for a job this worker cannot run (a legacy one)."""
    if not isinstance(job.prepared, PreparedJob):
        return None
    return responses.from_job(
        registry,
        job.prepared,
        response_id=str(ids.RunResponseId(job.run_id, engine_run_id)),
        run_id=job.run_id,
    )


async def execute_background_job(
    job: BackgroundJob,
    engine_run_id: str,
    registry: GraphRegistry,
    *,
    durable: DurableRuns | None = None,
    events: ResponseEventLog | None = None,
) -> ResponseObject:
    """Run a job and return its Response JSON.

    A job created with `stream: true` runs with streaming when `events` is given: every stream
    event goes to the log as it is produced, and the Response JSON is that of the terminal
    event.

    With `durable` and `events` (every `lgos worker`), a job runs once: under its run's lease,
    the log says whether an earlier execution of this engine run (a retry, a reassignment, a
    recovery) already finished it, and that Response is returned again without running
    anything; an execution that started earlier is continued from its checkpoint, and fails
    (`RUN_LOST_MESSAGE`) instead of starting over when its checkpoint is gone. Every end,
    streamed or not, is logged before the lease is released (`_Run.once`).

    No retries: a graph that raises yields a `failed` Response. A request problem found here
    (a stale interrupt answer, a busy run) keeps its message; anything else gets a generic
    message and the details go to the log.
    """
    token = log_fields.bind(
        request_id=job.request_id, model=job.model, run_id=job.run_id, engine_run_id=engine_run_id
    )
    # The workflow span continues the creating request's trace across the queue.
    trace_token = otel_context.attach(propagate.extract(job.trace_context))
    try:
        if durable is not None:
            registry = durable.registry(registry)
        prepared = _prepared(job, engine_run_id, registry)
        if prepared is None:
            logger.warning("background.legacy_job")
            echo = responses.job_echo(job.echo, str(ids.RunResponseId(job.run_id, engine_run_id)))
            return echo.snapshot("failed", error=failure(LEGACY_JOB_MESSAGE))
        log_fields.add(response_id=prepared.echo.id)
        run = _Run(job, engine_run_id, registry, prepared, events)

        async def attempt() -> ResponseObject:
            if durable is not None and events is not None and prepared.plan.run_id is not None:
                return await run.once(prepared.plan.run_id)
            if job.stream and events is not None:
                return await run.streamed(events, await run.written(events))
            return await run.polled()

        try:
            return await with_retries(attempt)
        except LgosError as error:
            logger.info("background.request_rejected", extra={"code": error.code})
            return prepared.echo.snapshot("failed", error=failure(error.message))
        except Exception:
            logger.exception("background.run_failed")
            return prepared.echo.snapshot("failed", error=failure())
    finally:
        otel_context.detach(trace_token)
        log_fields.reset(token)


@dataclass(frozen=True, slots=True)
class _Run:
    """One execution of a job: what it runs, and where its events and its end are logged."""

    job: BackgroundJob
    engine_run_id: str
    registry: GraphRegistry
    prepared: responses.PreparedResponse
    events: ResponseEventLog | None

    async def once(self, run_id: str) -> ResponseObject:
        """Run the job under its run's lease unless an earlier execution finished it.

        The log of the engine run is the durable record of its progress: a worker's first
        event (`response.in_progress`) says an execution started, a terminal event that one
        ended, with its Response. Both are written under the lease, and the end before the
        lease is released, so an execution that takes the lease next sees the end of any
        earlier one that finished (a stuck worker that woke and finished, a worker that died
        before its engine recorded the result).
        """
        events = self.events
        assert events is not None
        coordinator = self.registry.run_coordinator
        assert coordinator is not None  # a durable registry checkpoints every background graph
        key = checkpoint_thread_id(self.job.owner_scope, self.prepared.model, run_id)
        async with coordinator.lease(key):
            # A run no execution started is started here, in the same round trip as the read.
            started = ResponsesStream(self.prepared.echo, sequence=FIRST_WORKER_SEQUENCE)
            first = started.in_progress()
            written = as_events(
                await events.read_or_start(self.engine_run_id, FIRST_WORKER_SEQUENCE - 1, [first])
            )
            if written and written[-1]["type"] in TERMINAL_EVENTS:
                logger.info("background.already_finished")
                return as_response(written[-1]["response"])
            # Held by this execution: the graph's run takes it as it is, not again.
            run = dataclasses.replace(
                self,
                registry=dataclasses.replace(
                    self.registry, run_coordinator=_HeldLease(coordinator, key)
                ),
            )
            if written and not await run.can_continue(run_id):
                logger.error("background.run_lost")
                lost = self.prepared.echo.snapshot("failed", error=failure(RUN_LOST_MESSAGE))
                await run.log_end(events, lost, written[-1]["sequence_number"] + 1, key)
                return lost
            if not written:
                written = [first]
            if self.job.stream:
                return await run.streamed(events, written, key)
            response = await run.polled()
            await run.log_end(events, response, written[-1]["sequence_number"] + 1, key)
            return response

    async def can_continue(self, run_id: str) -> bool:
        """Whether an execution that started earlier may go on: from its checkpoint, or by
        applying its answer (which is checked against the pause, and refused if it was)."""
        if self.prepared.plan.resume is not None:
            return True
        return await has_work_left(
            self.prepared.config,
            self.prepared.request,
            scope=self.job.owner_scope,
            run_id=run_id,
            turn_id=self.prepared.echo.id if self.prepared.plan.keep_thread else None,
        )

    async def written(self, events: ResponseEventLog) -> list[StreamEvent]:
        """The events workers already logged for this engine run (not the API's)."""
        return as_events(await events.read(self.engine_run_id, FIRST_WORKER_SEQUENCE - 1))

    async def polled(self) -> ResponseObject:
        return await responses.create(
            self.registry, self.prepared, scope=self.job.owner_scope, continue_existing=True
        )

    async def streamed(
        self, events: ResponseEventLog, written: list[StreamEvent], key: str | None = None
    ) -> ResponseObject:
        """Stream the run into the log; under the lease on `key`, the batch with its end is
        logged by the lease's release when its coordinator can (`log_end`), else at once."""
        # Events a dead worker already wrote stay: this run continues their sequence numbers.
        if written and written[-1]["type"] in TERMINAL_EVENTS:
            # The previous worker finished the stream but died before the engine stored it.
            return as_response(written[-1]["response"])
        sequence = written[-1]["sequence_number"] + 1 if written else FIRST_WORKER_SEQUENCE
        stream = ResponsesStream(self.prepared.echo, sequence=sequence)
        if not written:
            await events.append(self.engine_run_id, [stream.in_progress()])
        result: ResponseObject | None = None
        async with _LogWriter(events, self.engine_run_id) as writer:
            async for batch in responses.stream_run(
                self.registry,
                self.prepared,
                stream,
                scope=self.job.owner_scope,
                continue_existing=True,
                raise_transient=True,
            ):
                ending = [event for event in batch if event["type"] in TERMINAL_EVENTS]
                if not ending:
                    writer.add(batch)
                    continue
                result = ending[-1]["response"]
                # The end goes last, with whatever the writer has not written yet.
                batch = [*await writer.rest(), *batch]
                coordinator = self.registry.run_coordinator
                if not (
                    key is not None
                    and coordinator is not None
                    and await coordinator.log_with_release(key, events, self.engine_run_id, batch)
                ):
                    await events.append(self.engine_run_id, batch)
        if result is None:  # the run ended without a terminal event: never expected
            return self.prepared.echo.snapshot("failed", error=failure())
        return result

    async def log_end(
        self, events: ResponseEventLog, response: ResponseObject, sequence: int, key: str
    ) -> None:
        """Log the end of a run that did not stream: polls read it there (an engine's own view
        of a run's end may lag), and a later execution of the run finds it. Under the lease on
        `key`, whose release logs it when its coordinator can (in the release's round trip,
        committed before the lease is free), else now."""
        ending: ResponseLifecycleEvent = {
            "type": TERMINAL_EVENT_FOR_STATUS.get(response["status"], "response.failed"),
            "sequence_number": sequence,
            "response": response,
        }
        coordinator = self.registry.run_coordinator
        assert coordinator is not None
        if await coordinator.log_with_release(key, events, self.engine_run_id, [ending]):
            return
        try:
            await events.append(self.engine_run_id, [ending])
        except Exception as error:
            # The engine records the result; the run itself succeeded. (Not raised: a retry
            # would find the run started, its checkpoint deleted, and fail it.)
            logger.warning(
                "background.result_not_logged", extra={"error.type": type(error).__qualname__}
            )


class _LogWriter:
    """Appends a streamed run's events to its log in order, one statement at a time, beside
    the run: the events that come while a statement is in flight go in the next one. A graph
    that streams faster than the database answers has its events written in fewer statements,
    and is not held up by its log; no event waits longer than the statement before it.

    A failed append is raised by the next `add` or by `rest`; leaving the block before `rest`
    (the run raised) stops the writing."""

    def __init__(self, log: ResponseEventLog, run_id: str) -> None:
        self._log = log
        self._run_id = run_id
        self._pending: list[StreamEvent] = []
        self._writing: asyncio.Task[None] | None = None
        self._ending = False

    async def __aenter__(self) -> _LogWriter:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        if self._writing is not None and not self._writing.done():
            self._writing.cancel()
            with contextlib.suppress(BaseException):
                await self._writing

    def add(self, events: list[StreamEvent]) -> None:
        writing = self._writing
        if writing is not None and writing.done():
            writing.result()  # raises what stopped it
            writing = self._writing = None
        self._pending.extend(events)
        if writing is None:
            self._writing = asyncio.create_task(self._write())

    def rest(self) -> Awaitable[list[StreamEvent]]:
        """The events still to write, once the statement in flight is done; from this call
        on, nothing more is written (the run's end takes the rest)."""
        self._ending = True
        return self._after_writing()

    async def _after_writing(self) -> list[StreamEvent]:
        if self._writing is not None:
            await self._writing
        rest, self._pending = self._pending, []
        return rest

    async def _write(self) -> None:
        while self._pending and not self._ending:
            batch, self._pending = self._pending, []
            await self._log.append(self._run_id, batch)


@dataclass(frozen=True, slots=True)
class _HeldLease:
    """The run coordinator as a job's graph run sees it while the executor holds the lease
    on `key`: the run's own `lease(key)` takes nothing more (a second take would find the
    run busy), and everything else is the coordinator's."""

    coordinator: RunCoordinator
    key: str

    def lease(self, key: str) -> AbstractAsyncContextManager[None]:
        if key == self.key:
            return contextlib.nullcontext()
        return self.coordinator.lease(key)

    def leased_fresh(self, key: str) -> bool:
        return self.coordinator.leased_fresh(key)

    async def mark_paused(self, key: str) -> None:
        await self.coordinator.mark_paused(key)

    async def mark_done(self, key: str) -> None:
        await self.coordinator.mark_done(key)

    async def finish(self, key: str, checkpointer: Any) -> bool:
        # The executor's release deletes the thread, after `_Run.once` has logged the end.
        return await self.coordinator.finish(key, checkpointer)

    async def log_with_release(
        self, key: str, log: Any, run_id: str, events: Sequence[Mapping[str, Any]]
    ) -> bool:
        return await self.coordinator.log_with_release(key, log, run_id, events)

    async def paused_before(self, cutoff: datetime, limit: int) -> list[str]:
        return await self.coordinator.paused_before(cutoff, limit)

    async def paused_at(self, key: str) -> datetime | None:
        return await self.coordinator.paused_at(key)


async def with_retries(
    attempt: Callable[[], Awaitable[ResponseObject]],
    delays: tuple[float, ...] = RETRY_DELAYS_SECONDS,
) -> ResponseObject:
    """`attempt()`, again after each delay while it fails for want of the database or finds
    its run busy; the last failure propagates."""
    for delay in (*delays, None):
        try:
            return await attempt()
        except Exception as error:
            transient = is_transient_database_error(error)
            if delay is None or not (transient or isinstance(error, RunBusyError)):
                raise
            logger.warning(
                "background.run_retrying",
                extra={"error.type": type(error).__qualname__, "retry_in_seconds": delay},
            )
            await asyncio.sleep(delay)
    raise AssertionError("unreachable")


@dataclass(frozen=True, slots=True)
class JobExecutor:
    """What a worker process runs jobs with, whatever its engine: the registry, durable runs
    and the event log of streamed Responses. `lgos worker` builds one (`server.worker`) and
    hands it to the engine's worker loop; the engine's task calls it once per job."""

    registry: GraphRegistry
    durable: DurableRuns | None = None
    events: ResponseEventLog | None = None

    async def __call__(self, job: BackgroundJob, engine_run_id: str) -> ResponseObject:
        return await execute_background_job(
            job, engine_run_id, self.registry, durable=self.durable, events=self.events
        )
