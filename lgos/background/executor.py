"""What a worker does with a job: exactly the foreground Responses path, on the request the
API prepared (the job holds it; nothing here decodes or prepares a request)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
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
from lgos.service import responses
from lgos.wire import ids
from lgos.wire.responses_encoder import ResponsesStream, failure
from lgos.wire.types.events import ResponseLifecycleEvent, as_events
from lgos.wire.types.responses import ResponseObject, as_response

logger = logging.getLogger("lgos.background")

# A run that loses its database connection (a restart, a failover) is tried again from its
# last checkpoint after these pauses, about a minute in all, before its Response fails. A run
# found busy is tried again the same way: the holder may be a stuck worker whose sessions
# the reaper has just ended, and its lease goes with them.
RETRY_DELAYS_SECONDS = (0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0)


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

    No retries: a graph that raises yields a `failed` Response. A request problem found here
    (a stale interrupt answer, a busy run) keeps its message; anything else gets a generic
    message and the details go to the log. A run whose worker died is continued from its
    last checkpoint when the graph has one (always, with `durable`), so finished nodes do
    not run again.
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

        async def attempt() -> ResponseObject:
            if job.stream and events is not None:
                return await _execute_streaming(job, engine_run_id, registry, prepared, events)
            return await responses.create(
                registry, prepared, scope=job.owner_scope, continue_existing=True
            )

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


async def _execute_streaming(
    job: BackgroundJob,
    engine_run_id: str,
    registry: GraphRegistry,
    prepared: responses.PreparedResponse,
    events: ResponseEventLog,
) -> ResponseObject:
    # Events a dead worker already wrote stay: this run continues their sequence numbers.
    written = as_events(await events.read(engine_run_id, FIRST_WORKER_SEQUENCE - 1))
    if written and written[-1]["type"] in TERMINAL_EVENTS:
        # The previous worker finished the stream but died before the engine stored the result.
        return as_response(written[-1]["response"])
    sequence = written[-1]["sequence_number"] + 1 if written else FIRST_WORKER_SEQUENCE
    stream = ResponsesStream(prepared.echo, sequence=sequence)
    if not written:
        await events.append(engine_run_id, [stream.in_progress()])
    result: ResponseObject | None = None
    async for batch in responses.stream_run(
        registry,
        prepared,
        stream,
        scope=job.owner_scope,
        continue_existing=True,
        raise_transient=True,
    ):
        await events.append(engine_run_id, batch)
        for event in batch:
            if event["type"] in TERMINAL_EVENTS:
                result = event["response"]
    if result is None:  # the run ended without a terminal event: never expected
        return prepared.echo.snapshot("failed", error=failure())
    return result


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

    async def run_logging_result(self, job: BackgroundJob, engine_run_id: str) -> ResponseObject:
        """Run a job and leave its final Response in the event log as a terminal event, for
        an engine whose own view of a run's end lags behind (Hatchet's REST view, by a second
        or more): a poll then reads the end from the log, on any API instance, as it already
        does for a streamed run (whose log ends with its terminal event anyway).

        A run whose previous attempt logged its end but died before the engine recorded it
        returns that Response again, so the engine ends up with what polls already showed.
        """
        if job.stream or self.events is None:
            return await self(job, engine_run_id)
        logged = await self.events.last(engine_run_id)
        if logged is not None and logged.get("type") in TERMINAL_EVENTS:
            return as_response(logged["response"])
        response = await self(job, engine_run_id)
        ending: ResponseLifecycleEvent = {
            "type": TERMINAL_EVENT_FOR_STATUS.get(response["status"], "response.failed"),
            "sequence_number": FIRST_WORKER_SEQUENCE,
            "response": response,
        }
        try:
            await self.events.append(engine_run_id, [ending])
        except Exception as error:
            # Polls wait for the engine's own view instead; the run itself succeeded.
            logger.warning(
                "background.result_not_logged", extra={"error.type": type(error).__qualname__}
            )
        return response
