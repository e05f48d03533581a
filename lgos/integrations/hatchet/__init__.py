"""Hatchet engine: background Responses as runs of one Hatchet task.

API processes trigger the task (gRPC; creates that come while a trigger is on its way go
together in one call, `triggers`), read runs over REST (the gRPC details call retries
NOT_FOUND for many seconds) and cancel them; `lgos worker` (`LGOS_BACKGROUND=hatchet`) runs the
task with the registry and resources in the worker's lifespan. Hatchet stores each run's input
(the `BackgroundJob`) and output (the Response JSON).

The REST view shows a new run some milliseconds after its trigger, and the SDK retries every
REST 404 for it. The API reads through a client whose retries are quick (`QuickRetryWait`), so
an id the engine does not know is a prompt 404; where LGOS knows the run exists (the engine
named it, or the store indexes it) the backend waits for the view itself, within its bound on
an engine call (`HatchetBackgroundBackend.get(exists=True)`).

Idempotency is Hatchet's own TTL idempotency on `input.idempotency_key`: the engine refuses a
second trigger with a claimed key (`IdempotencyCollisionError`) and names the existing run, on
any API instance. The key is always a string: the digest of the client's key, or a fresh uuid
when the client sent none. Engines older than the idempotency feature silently ignore it, so
both sides refuse them at start-up.

A worker on PostgreSQL also holds LGOS's worker lease (`run_hatchet_worker`), and its SDK
listener child stops heartbeating to the engine while the worker process is stuck (`liveness`,
through the one private SDK name in `internals`).
"""

from __future__ import annotations

import asyncio
import logging
import re
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Mapping
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Protocol

import grpc  # type: ignore[import-untyped]  # the SDK's dependency; no stubs
import tenacity  # the SDK's dependency
from hatchet_sdk import (
    ClientConfig,
    Context,
    Hatchet,
    IdempotencyCollisionError,
    TenacityConfig,
    TTLBasedIdempotencyConfig,
)
from hatchet_sdk.clients.rest.exceptions import (
    BadRequestException,
    NotFoundException,
    RestTransportError,
)
from hatchet_sdk.runnables.workflow import Standalone
from pydantic import BaseModel, ConfigDict, ValidationError

from lgos.background.executor import JobExecutor
from lgos.core.background import BackgroundJob, BackgroundRun, ResponseEventLog, engine_statuses
from lgos.core.errors import ConfigurationError, EngineUnavailableError
from lgos.core.webhooks import WebhookSettings
from lgos.integrations.hatchet.triggers import BatchedTrigger, TriggerPort
from lgos.integrations.hatchet.webhooks import WebhookTrigger, webhook_trigger

if TYPE_CHECKING:  # psycopg is lgos[postgres]'s: an API on Hatchet alone does without it
    from lgos.integrations.postgres.liveness import WorkerLease

__all__ = [
    "MIN_ENGINE_VERSION",
    "TASK_NAME",
    "HatchetBackgroundBackend",
    "HatchetJobInput",
    "QuickRetryWait",
    "check_engine_version",
    "create_hatchet_task",
    "open_hatchet_client",
    "run_hatchet_worker",
]

logger = logging.getLogger("lgos.background.hatchet")

TASK_NAME = "lgos-background-response"
# Idempotency keys arrived in engine v0.98.9; older engines accept the setting and ignore it.
MIN_ENGINE_VERSION = (0, 98, 9)
# Hatchet's defaults (5 min in the queue, 60 s of execution) would fail ordinary reports.
DEFAULT_SCHEDULE_TIMEOUT = timedelta(minutes=30)
DEFAULT_EXECUTION_TIMEOUT = timedelta(hours=1)
# How long a client's Idempotency-Key names the same run (what OpenAI-style clients expect).
DEFAULT_IDEMPOTENCY_TTL = timedelta(hours=24)
# Without an engine the SDK's trigger hangs instead of failing; bound every engine call.
ENGINE_CALL_TIMEOUT_SECONDS = 30.0
# How often a cancel re-reads the run until the engine shows it finished.
CANCEL_POLL_SECONDS = 0.1
# A read of a run the engine has (`get(exists=True)`) that its REST view does not show yet is
# read again after these pauses, doubling from the first to the longest, within `call_timeout`.
EXISTING_RUN_FIRST_PAUSE_SECONDS = 0.05
EXISTING_RUN_LONGEST_PAUSE_SECONDS = 1.0

# Hatchet names its statuses as we do, in capitals (and says RUNNING for in progress).
_STATUS = engine_statuses(
    queued=["QUEUED"],
    in_progress=["RUNNING"],
    completed=["COMPLETED"],
    failed=["FAILED"],
    cancelled=["CANCELLED"],
)
_VERSION = re.compile(r"v?(\d+)\.(\d+)\.(\d+)")


class HatchetJobInput(BaseModel):
    """The task's input: the job, and the string Hatchet's idempotency expression reads."""

    model_config = ConfigDict(extra="ignore")

    job: dict[str, Any]  # the BackgroundJob as JSON: `BackgroundJob.model_validate` reads it
    idempotency_key: str


def create_hatchet_task(
    hatchet: Hatchet,
    *,
    name: str = TASK_NAME,
    schedule_timeout: timedelta = DEFAULT_SCHEDULE_TIMEOUT,
    execution_timeout: timedelta = DEFAULT_EXECUTION_TIMEOUT,
    idempotency_ttl: timedelta = DEFAULT_IDEMPOTENCY_TTL,
    webhooks: WebhookTrigger | None = None,
) -> Standalone[HatchetJobInput, dict[str, Any]]:  # its output: the Response JSON
    """The task both sides declare: the API triggers it, the worker runs it.

    No retries: a graph that raises gives a `failed` Response; a client creates a new one.
    """

    @hatchet.task(
        name=name,
        input_validator=HatchetJobInput,
        schedule_timeout=schedule_timeout,
        execution_timeout=execution_timeout,
        retries=0,
        idempotency=TTLBasedIdempotencyConfig(
            key_expression="input.idempotency_key", ttl=idempotency_ttl
        ),
    )
    # The Response JSON: Hatchet checks the task's output against this hint.
    async def run_background_response(task_input: HatchetJobInput, ctx: Context) -> dict[str, Any]:
        executor = ctx.lifespan
        if not isinstance(executor, JobExecutor):
            raise RuntimeError("the Hatchet worker's lifespan must yield a JobExecutor")
        job = BackgroundJob.model_validate(task_input.job)
        # The API reads a run's end from the log: the REST view shows it a second or more late.
        response = dict(await executor(job, uuid.UUID(ctx.workflow_run_id).hex))
        if webhooks is not None:
            await webhooks.ended(response)
        return response

    return run_background_response


class RunsPort(Protocol):
    """The part of `hatchet.runs` the backend uses."""

    async def aio_get(self, workflow_run_id: str) -> Any: ...

    async def aio_get_status(self, workflow_run_id: str) -> Any: ...

    async def aio_get_details(self, external_id: str) -> Any: ...

    async def aio_cancel(self, run_id: str) -> None: ...


class HatchetBackgroundBackend:
    """`BackgroundBackend` over a Hatchet task (trigger) and `hatchet.runs` (read, cancel).

    Its workers log every run's start and final Response (`lgos.background.executor`):
    polls read those first and this engine's view now and then (`results_in_log`).
    """

    # Capabilities (`BackgroundBackend`): it streams when given `events`, and the start and
    # end of every run are in `events` before this engine reports them.
    results_in_log = True

    def __init__(
        self,
        task: TriggerPort,
        runs: RunsPort,
        *,
        call_timeout: float = ENGINE_CALL_TIMEOUT_SECONDS,
        events: ResponseEventLog | None = None,
        webhooks: WebhookTrigger | None = None,
    ) -> None:
        # Creates that come while a trigger is on its way go in one call (`triggers`).
        self.trigger = BatchedTrigger(task, call_timeout)
        self.webhooks = webhooks
        self.runs = runs
        self.call_timeout = call_timeout
        # Without one (no PostgreSQL), `stream` with `background` is refused.
        self.events = events

    async def submit(self, job: BackgroundJob) -> BackgroundRun:
        task_input = HatchetJobInput(
            job=job.model_dump(mode="json"),
            idempotency_key=job.idempotency_key or uuid.uuid4().hex,
        )
        try:
            async with _engine_call():
                ref = await self.trigger(task_input)
        except IdempotencyCollisionError as collision:
            existing = await self.get(_hex(collision.existing_run_external_id), exists=True)
            if existing is None:
                raise RuntimeError("Hatchet named an existing run it cannot find") from collision
            return existing
        return BackgroundRun(id=_hex(ref.workflow_run_id), job=job, status="queued")

    async def get(
        self, run_id: str, *, exists: bool = False, known: BackgroundRun | None = None
    ) -> BackgroundRun | None:
        try:
            engine_id = _uuid(run_id)
        except ValueError:
            return None
        if known is not None:
            refreshed = await self._refreshed(engine_id, known)
            if refreshed is not None:
                return refreshed
        details = await self._read(engine_id)
        if exists:
            # The engine named this run, or the store indexes it: the REST view shows a new
            # run some milliseconds after its trigger (longer under load), so read it again
            # until it shows, within the bound on an engine call. An id not known to exist is
            # read once (with the SDK's quick retries): a prompt None, the client's 404.
            loop = asyncio.get_running_loop()
            deadline = loop.time() + self.call_timeout
            pause = EXISTING_RUN_FIRST_PAUSE_SECONDS
            while details is None and loop.time() + pause < deadline:
                await asyncio.sleep(pause)
                pause = min(2 * pause, EXISTING_RUN_LONGEST_PAUSE_SECONDS)
                details = await self._read(engine_id)
        run = None if details is None else to_run(run_id, details.run)
        if run is not None and run.status == "failed":
            return await self._confirmed_failure(run)
        return run

    async def _refreshed(self, engine_id: str, known: BackgroundRun) -> BackgroundRun | None:
        """`known` with the status the engine gives it now, from the REST status alone (one
        query of the engine, a string back) rather than the run's whole view (five queries,
        its input, output and events); `known` as it is while the view does not show the run.
        None when only the whole view will do: a completed run (its Response is its output),
        or a status this engine does not name."""
        try:
            async with _engine_call():
                status = await asyncio.wait_for(
                    self.runs.aio_get_status(engine_id), self.call_timeout
                )
        except (NotFoundException, BadRequestException):
            return known
        ours = _STATUS.get(str(getattr(status, "value", status)))
        if ours is None or ours == "completed":
            return None
        run = known if ours == known.status else known.model_copy(update={"status": ours})
        return await self._confirmed_failure(run) if ours == "failed" else run

    async def _read(self, engine_id: str) -> Any | None:
        """The REST view of a run (`V1WorkflowRunDetails`), or None while it shows none."""
        try:
            async with _engine_call():
                return await asyncio.wait_for(self.runs.aio_get(engine_id), self.call_timeout)
        except (NotFoundException, BadRequestException):
            return None

    async def _confirmed_failure(self, run: BackgroundRun) -> BackgroundRun:
        """`run` as the engine's own tables have it, for a run its REST view shows failed.

        That view (the engine's OLAP tables) shows FAILED as soon as an attempt fails, also
        one the engine then tries again itself: a task it could not send to a worker whose
        stream was down (after a database outage, a network cut), or one it took back from a
        silent worker. A poll that believed it answered `failed` for a run that then ran and
        completed. The run details over gRPC read the engine's task tables, which know whether
        the run is over."""
        try:
            async with _engine_call():
                details = await asyncio.wait_for(
                    self.runs.aio_get_details(_uuid(run.id)), self.call_timeout
                )
        except grpc.RpcError as error:
            if error.code() == grpc.StatusCode.NOT_FOUND:  # gone from those tables: it is over
                return run
            raise
        if details.done:
            return run
        running = str(getattr(details.status, "value", details.status)) == "RUNNING"
        # The request's fields name the run.
        logger.info("background.hatchet.attempt_retried")
        return run.model_copy(update={"status": "in_progress" if running else "queued"})

    async def cancel(self, run_id: str) -> None:
        # Hatchet cancels the task's asyncio task after a 1 s grace: CancelledError in the
        # graph. A finished run keeps its status.
        async with _engine_call():
            await asyncio.wait_for(self.runs.aio_cancel(_uuid(run_id)), self.call_timeout)
        # The engine applies the cancel asynchronously: wait until the run reads as finished,
        # so the cancel request answers with the cancelled Response (as OpenAI's does).
        deadline = asyncio.get_running_loop().time() + self.call_timeout
        while asyncio.get_running_loop().time() < deadline:
            run = await self.get(run_id)
            if run is None or run.terminal:
                # A cancelled task runs nothing more: the canceller triggers its webhook.
                if run is not None and run.status == "cancelled" and self.webhooks is not None:
                    await self.webhooks.cancelled(run.job, run_id)
                return
            await asyncio.sleep(CANCEL_POLL_SECONDS)


ENGINE_NAME = "Hatchet"
# The gRPC answers that mean the engine cannot serve anyone right now: it is out of reach, or it
# cannot check our token (checked at start-up, so at run time that means the engine's own
# database is away). Any other answer is the engine's word on the call itself (a cancel of a
# finished run, an unknown id) and stays what it was.
_ENGINE_AWAY_CODES = frozenset({grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.UNAUTHENTICATED})


def engine_unavailable(error: BaseException) -> bool:
    """Whether `error` says the Hatchet engine (or its database) is away, not that the call
    was wrong: our bound on the call ran out, the gRPC status says so, or the REST call never
    reached the engine (refused, reset, timed out)."""
    if isinstance(error, TimeoutError | RestTransportError):
        return True
    if isinstance(error, grpc.RpcError):
        code = getattr(error, "code", None)
        return callable(code) and code() in _ENGINE_AWAY_CODES
    return False


@asynccontextmanager
async def _engine_call() -> AsyncIterator[None]:
    try:
        yield
    except Exception as error:
        if engine_unavailable(error):
            raise EngineUnavailableError(ENGINE_NAME) from error
        raise


def to_run(run_id: str, run: Any) -> BackgroundRun | None:
    """Our view of a Hatchet workflow run; None for a run that is not one of ours."""
    task_input = _job_input(run.input)
    status = _STATUS.get(str(getattr(run.status, "value", run.status)))
    if task_input is None or status is None:
        return None
    try:
        job = BackgroundJob.model_validate(task_input.job)
    except ValidationError:
        return None
    return BackgroundRun(id=run_id, job=job, status=status).with_output(_response(run.output))


def _job_input(raw: Any) -> HatchetJobInput | None:
    # The REST view holds the task input itself, or wraps it under "input" on some engines.
    for candidate in (raw, raw.get("input") if isinstance(raw, Mapping) else None):
        if isinstance(candidate, Mapping):
            try:
                return HatchetJobInput.model_validate(candidate)
            except ValidationError:
                continue
    return None


def _response(output: Any) -> dict[str, Any] | None:  # JSON read back from Hatchet
    # The run's output is the task's return value, possibly keyed by the task's name.
    if isinstance(output, Mapping):
        if output.get("object") == "response":
            return dict(output)
        nested = [value for value in output.values() if isinstance(value, Mapping)]
        if len(nested) == 1 and nested[0].get("object") == "response":
            return dict(nested[0])
    return None


def _hex(run_id: str) -> str:
    return uuid.UUID(run_id).hex


def _uuid(run_id: str) -> str:
    return str(uuid.UUID(hex=run_id))


def _route_sdk_logs() -> None:
    # The SDK's "hatchet" logger prints its own text lines to stdout; send its records through
    # the process's logging instead, so `lgos serve` and `lgos worker` stay one JSON record per
    # line. (The worker's action-listener subprocess, which the SDK spawns, keeps its own.)
    sdk_logger = logging.getLogger("hatchet")
    for handler in list(sdk_logger.handlers):
        sdk_logger.removeHandler(handler)
    sdk_logger.propagate = True


class QuickRetryWait(tenacity.wait_exponential_jitter):
    """The SDK's wait between its attempts at a call, made short: 20, 40, 80, 160 ms, each
    with up to 20 ms of jitter (0.38 s at most over the SDK's 5 attempts).

    The SDK retries every REST 404 and 5xx (a new run's REST view lags its trigger), by
    default after 1, 2, 4 and 8 s plus up to 1 s of jitter each: ~17 s before any read of an
    unknown id (a client's random, foreign or deleted id) answers. The tenacity settings call
    the wait class with no arguments, hence the defaults here."""

    def __init__(self) -> None:
        super().__init__(multiplier=0.02, max=0.25, jitter=0.02)


def connect(*, quick_retries: bool = False) -> Hatchet:
    """The SDK's client from HATCHET_CLIENT_* (and .env files); a bad setup is a clear error.

    `quick_retries`: the SDK waits `QuickRetryWait` between its attempts at a call, not its own
    back-off; its other retry settings (HATCHET_CLIENT_TENACITY_*) stay as they are."""
    _route_sdk_logs()
    try:
        if not quick_retries:
            return Hatchet()
        return Hatchet(config=ClientConfig(tenacity=TenacityConfig(wait=QuickRetryWait)))
    except ValidationError as error:
        first = error.errors()[0].get("msg", str(error))
        raise ConfigurationError(f"LGOS_BACKGROUND=hatchet: {first}") from None


def parse_engine_version(version: str | None) -> tuple[int, int, int] | None:
    if not version:
        return None
    found = _VERSION.match(version.strip())
    if found is None:
        return None
    return int(found[1]), int(found[2]), int(found[3])


async def check_engine_version(
    hatchet: Hatchet, wait_seconds: float = ENGINE_CALL_TIMEOUT_SECONDS
) -> str:
    """Refuse engines without idempotency keys (they would run retried creates twice)."""
    try:
        version = await asyncio.wait_for(hatchet.aio_get_engine_version(), wait_seconds)
    except TimeoutError:
        raise ConfigurationError(
            f"the Hatchet engine did not answer within {wait_seconds:.0f}s; check "
            "HATCHET_CLIENT_TOKEN, HATCHET_CLIENT_HOST_PORT and HATCHET_CLIENT_TLS_STRATEGY"
        ) from None
    parsed = parse_engine_version(version)
    wanted = ".".join(str(part) for part in MIN_ENGINE_VERSION)
    if parsed is None or parsed < MIN_ENGINE_VERSION:
        raise ConfigurationError(
            f"the Hatchet engine ({version or 'version unknown'}) is older than v{wanted}, "
            "which introduced idempotency keys; upgrade the engine"
        )
    return str(version)


@asynccontextmanager
async def open_hatchet_client(
    events: ResponseEventLog | None = None,
    webhooks: WebhookSettings | None = None,
) -> AsyncIterator[HatchetBackgroundBackend]:
    """The API side. Reads HATCHET_CLIENT_* from the environment, like the SDK. Without an
    event log (no PostgreSQL), `stream` with `background` is refused."""
    hatchet = connect()
    version = await check_engine_version(hatchet)
    logger.info("background.hatchet.connected", extra={"engine_version": version})
    yield HatchetBackgroundBackend(
        create_hatchet_task(hatchet),
        # Reads and cancels through a client of their own whose SDK retries are quick: an
        # unknown id is a prompt 404, and the backend waits itself for a run it knows exists
        # (`get(exists=True)`). Triggers keep the SDK's patience (a run's, a webhook's: a
        # trigger that gave up early in an engine blip would be a 503, or a lost delivery).
        # The client opens no connection until a call: REST builds one per call.
        connect(quick_retries=True).runs,
        events=events,
        webhooks=webhook_trigger(hatchet, webhooks),
    )


def run_hatchet_worker(
    open_executor: Callable[[], AbstractAsyncContextManager[JobExecutor]],
    *,
    name: str,
    slots: int,
    webhooks: WebhookSettings | None = None,
    lease: WorkerLease | None = None,
    recovery_interval: float = 10.0,
) -> None:
    """`lgos worker` on Hatchet. Blocks; Hatchet's worker handles SIGTERM itself.

    Hatchet's worker owns its event loop (it refuses to start inside a running one), so the
    executor is opened in the worker's lifespan, on that loop.

    With `lease` (a worker on PostgreSQL), the worker has LGOS's liveness, as on DBOS: it
    holds its lease in `lgos_workers` from a heartbeat thread, exits on waking from a stop that
    may have cost it the lease (`WakeGuard`, started before any other thread), fences workers
    whose lease expired every `recovery_interval`, and stops looking alive to the engine
    while its own process is stuck (`liveness`).
    """
    guard = _hold_lease(lease) if lease is not None else None
    try:
        hatchet = connect()
        version = asyncio.run(check_engine_version(hatchet))

        async def lifespan() -> AsyncGenerator[JobExecutor, None]:
            # Hatchet runs this after registering the task with the engine and before it
            # takes runs: from here on, triggers find a worker that declared the task.
            reaper = (
                asyncio.create_task(_reap(lease, recovery_interval)) if lease is not None else None
            )
            try:
                async with open_executor() as executor:
                    logger.info(
                        "worker.started",
                        extra={"worker_id": name, "engine": "hatchet", "engine_version": version},
                    )
                    yield executor
            finally:
                if reaper is not None:
                    reaper.cancel()
            logger.info("worker.stopped", extra={"worker_id": name})

        trigger = webhook_trigger(hatchet, webhooks)
        # The delivery task is declared with the run task (triggered after a run), when enabled.
        workflows: list[Any] = [create_hatchet_task(hatchet, webhooks=trigger)]
        if trigger is not None:
            workflows.append(trigger.task)
        worker = hatchet.worker(name, slots=slots, workflows=workflows, lifespan=lifespan)
        worker.start()
    finally:
        if guard is not None:
            guard()


def _hold_lease(lease: WorkerLease) -> Callable[[], None]:
    """Claim the lease, start the guard, the heartbeat and the listener's watch; return what
    undoes them."""
    from lgos.integrations.hatchet.internals import watch_worker_from_listener
    from lgos.integrations.hatchet.liveness import Pulse
    from lgos.integrations.postgres.wake_guard import WakeGuard

    async def claim() -> None:
        await lease.create_table()
        await lease.claim()

    asyncio.run(claim())
    guard = WakeGuard(lease.may_be_lost, lease.executor_id)
    lease.start_heartbeat()
    pulse = Pulse(lease.may_be_lost)
    if watch_worker_from_listener(pulse.shared):
        pulse.start()
    else:
        logger.warning("worker.listener_watch_unavailable")

    def release() -> None:
        guard.stop()
        pulse.stop()
        lease.stop_heartbeat()
        asyncio.run(lease.release())

    return release


async def _reap(lease: WorkerLease, interval: float) -> None:
    """Fence the workers whose lease expired: their run leases go with their sessions, so the
    worker Hatchet reassigns their runs to can take them."""
    while True:
        try:
            await lease.fence_expired()
        except Exception:
            logger.exception("worker.chore_failed", extra={"chore": "fence_expired"})
        await asyncio.sleep(interval)
