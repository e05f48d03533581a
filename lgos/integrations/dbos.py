"""DBOS Transact engine: background Responses as durable workflows in the user's PostgreSQL.

API processes talk plain SQL through `DBOSClient` (no DBOS runtime): submit = enqueue a
workflow whose id is the engine run id, get = read its status, input and output, cancel =
`cancel_workflow`. Workers (`lgos worker`, `LGOS_BACKGROUND=dbos`) call `DBOS.launch()` and run
the queue. The Response JSON is the workflow output and the `BackgroundJob` its input, both
stored as JSON (portable serialization), so there is no Response table of our own.

Idempotency is the workflow id: a keyed create uses `uuid5(digest)`, and DBOS returns the
existing workflow for an id already taken, on any API instance, even after it finished.

Recovery: each worker holds a session advisory lock named after its executor id for as long as
it lives. Every worker periodically looks for runs left PENDING by executors whose lock is free
(their process died) and re-enqueues them; the graph then continues from its last checkpoint.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from dbos import DBOS, DBOSClient, EnqueueOptions, WorkflowSerializationFormat
from psycopg import AsyncConnection
from psycopg.conninfo import conninfo_to_dict
from pydantic import ValidationError
from sqlalchemy.engine import URL

from lgos.background.executor import JobExecutor
from lgos.core.background import (
    TERMINAL_STATUSES,
    BackgroundJob,
    BackgroundRun,
    ResponseEventLog,
    engine_statuses,
)
from lgos.core.errors import ConfigurationError
from lgos.integrations.postgres import (
    advisory_unlock,
    try_advisory_lock,
    wait_for_advisory_lock,
)

if TYPE_CHECKING:
    from dbos._sys_db import WorkflowStatus

__all__ = [
    "APPLICATION_NAME",
    "APPLICATION_VERSION",
    "QUEUE_NAME",
    "WORKFLOW_NAME",
    "DBOSBackgroundBackend",
    "DBOSWorker",
    "engine_run_id",
    "migrate",
    "open_dbos_client",
]

logger = logging.getLogger("lgos.background.dbos")

APPLICATION_NAME = "lgos"
# The workflow is one step that runs a job; its code does not depend on the user's graphs, so
# one fixed version lets every deployment's workers dequeue and recover every run. Change it
# only when the job format or the workflow's steps change incompatibly.
APPLICATION_VERSION = "lgos-background-1"
WORKFLOW_NAME = "lgos.background_response"
STEP_NAME = "lgos.run_graph"
QUEUE_NAME = "lgos-background"
MAX_RECOVERY_ATTEMPTS = 5
# How often a worker looks for new runs (DBOS polls its queue table).
QUEUE_POLLING_INTERVAL_SECONDS = 0.2
_RUN_NAMESPACE = uuid.UUID("3f4f9a2e-55f1-4b7e-9d8a-1c2b3d4e5f60")
_EXECUTOR_LOCK_PREFIX = "lgos.worker:"
_MIGRATION_LOCK = "lgos.dbos.migrations"
_MIGRATION_LOCK_TIMEOUT_SECONDS = 600.0
# How long a starting worker waits for its executor id (a reaper may hold it briefly).
_EXECUTOR_LOCK_TIMEOUT_SECONDS = 30.0
_RETENTION_BATCH = 500

_STATUS = engine_statuses(
    queued=["ENQUEUED", "DELAYED"],
    in_progress=["PENDING"],
    completed=["SUCCESS"],
    failed=["ERROR", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"],
    cancelled=["CANCELLED"],
)
_FINISHED = [name for name, status in _STATUS.items() if status in TERMINAL_STATUSES]


def engine_run_id(idempotency_key: str | None) -> str:
    """The workflow id: derived from the key, so every retry of a create names one run."""
    if idempotency_key is None:
        return uuid.uuid4().hex
    return uuid.uuid5(_RUN_NAMESPACE, idempotency_key).hex


class DBOSBackgroundBackend:
    """`BackgroundBackend` over a `DBOSClient` (API side: enqueue, read, cancel)."""

    def __init__(self, client: DBOSClient, events: ResponseEventLog | None = None) -> None:
        self.client = client
        # Streamed Responses' events, in the same database (`PostgresResponseEventLog`).
        self.events = events

    async def submit(self, job: BackgroundJob) -> BackgroundRun:
        run_id = engine_run_id(job.idempotency_key)
        options: EnqueueOptions = {
            "workflow_name": WORKFLOW_NAME,
            "queue_name": QUEUE_NAME,
            "workflow_id": run_id,
            "app_version": APPLICATION_VERSION,
            "application_name": APPLICATION_NAME,
            "serialization_type": WorkflowSerializationFormat.PORTABLE,
        }
        await self.client.enqueue_async(options, run_id, job.model_dump(mode="json"))
        if job.idempotency_key is None:
            return BackgroundRun(id=run_id, job=job, status="queued")
        # The id may have been taken by an earlier create with this key: report that run, whose
        # stored job tells the caller whether the body was the same.
        existing = await self.get(run_id)
        if existing is None:
            raise RuntimeError(f"DBOS workflow {run_id} vanished right after its enqueue")
        return existing

    async def get(self, run_id: str) -> BackgroundRun | None:
        statuses = await self.client.list_workflows_async(
            workflow_ids=[run_id], name=WORKFLOW_NAME, load_output=True
        )
        if not statuses:
            return None
        return to_run(statuses[0])

    async def cancel(self, run_id: str) -> None:
        # DBOS leaves finished workflows alone; a running one is preempted within ~1 s.
        await self.client.cancel_workflow_async(run_id)

    async def delete_finished(self, older_than: timedelta) -> int:
        """Delete runs that finished more than `older_than` ago; return how many."""
        cutoff = (datetime.now(UTC) - older_than).isoformat()
        deleted = 0
        while True:
            expired = await self.client.list_workflows_async(
                name=WORKFLOW_NAME,
                status=_FINISHED,
                completed_before=cutoff,
                limit=_RETENTION_BATCH,
                load_input=False,
                load_output=False,
            )
            if not expired:
                return deleted
            run_ids = [item.workflow_id for item in expired]
            await self.client.delete_workflows_async(run_ids)
            if self.events is not None:
                await self.events.delete(run_ids)
            deleted += len(expired)
            if len(expired) < _RETENTION_BATCH:
                return deleted


def to_run(status: WorkflowStatus) -> BackgroundRun | None:
    """Our view of a DBOS workflow; None for anything that is not one of our runs."""
    inputs = status.input or {"args": (), "kwargs": {}}
    args = tuple(inputs.get("args") or ())
    if len(args) != 2:
        return None
    try:
        job = BackgroundJob.model_validate(args[1])
        run = BackgroundRun(id=status.workflow_id, job=job, status=_STATUS[status.status])
    except (ValidationError, KeyError):
        logger.warning(
            "background.dbos.foreign_workflow", extra={"workflow_id": status.workflow_id}
        )
        return None
    return run.with_output(status.output)


def _sqlalchemy_url(uri: str) -> str:
    """DBOS wants a SQLAlchemy URL; LGOS_POSTGRES_URI may be a URL or a libpq key/value string.
    The driver is psycopg 3 (installed with lgos[postgres]), whatever the operator wrote."""
    params = {key: str(value) for key, value in conninfo_to_dict(uri).items()}
    port = params.pop("port", None)
    url = URL.create(
        "postgresql+psycopg",
        username=params.pop("user", None),
        password=params.pop("password", None),
        host=params.pop("host", None),
        port=int(port) if port else None,
        database=params.pop("dbname", None),
        query=params,
    )
    return url.render_as_string(hide_password=False)


async def migrate(uri: str) -> None:
    """Create or upgrade DBOS's schema, one process at a time (API replicas and workers all
    start by calling this, and `DBOSClient` never migrates by itself)."""
    async with await AsyncConnection.connect(uri, autocommit=True) as conn:
        await wait_for_advisory_lock(
            conn, _MIGRATION_LOCK, limit_seconds=_MIGRATION_LOCK_TIMEOUT_SECONDS
        )
        try:
            await asyncio.to_thread(DBOS.migrate, _sqlalchemy_url(uri))
        finally:
            await advisory_unlock(conn, _MIGRATION_LOCK)


@asynccontextmanager
async def open_dbos_client(
    uri: str, events: ResponseEventLog | None = None
) -> AsyncIterator[DBOSBackgroundBackend]:
    """The API side: a `DBOSBackgroundBackend` on a plain-SQL `DBOSClient`."""
    await migrate(uri)
    client = await asyncio.to_thread(
        lambda: DBOSClient(
            system_database_url=_sqlalchemy_url(uri), application_name=APPLICATION_NAME
        )
    )
    try:
        yield DBOSBackgroundBackend(client, events)
    finally:
        await asyncio.to_thread(client.destroy)


# The worker's state, read by the workflow step. DBOS names workflows globally and passes them
# only JSON arguments, so the registry cannot travel as an argument.
_worker: DBOSWorker | None = None
_registered = False


async def _run_graph_step(run_id: str, job: dict[str, Any]) -> dict[str, Any]:
    worker = _worker
    if worker is None:
        raise RuntimeError("no LGOS DBOS worker is running in this process")
    return await worker.executor(BackgroundJob.model_validate(job), run_id)


def _register_workflow() -> None:
    """Declare the workflow and its step with DBOS (once per process, before launch)."""
    global _registered
    if _registered:
        return
    # Preemptible: cancelling the workflow cancels the running graph (CancelledError in the
    # node). No step retries: a failed graph is a failed Response.
    step = DBOS.step(name=STEP_NAME, preemptible=True, retries_allowed=False)(_run_graph_step)

    async def background_response(run_id: str, job: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = await step(run_id, job)
        return result

    # A run is re-dispatched when its worker dies; a run that keeps killing its workers (out
    # of memory, say) ends as failed after this many deaths instead of looping forever.
    DBOS.workflow(
        name=WORKFLOW_NAME,
        max_recovery_attempts=MAX_RECOVERY_ATTEMPTS,
        serialization_type=WorkflowSerializationFormat.PORTABLE,
    )(background_response)
    _registered = True


class DBOSWorker:
    """One `lgos worker` process on DBOS: launch, recover orphans, sweep, shut down."""

    def __init__(
        self,
        uri: str,
        executor: JobExecutor,
        *,
        executor_id: str,
        slots: int,
        recovery_interval: float,
        retention: timedelta,
        retention_interval: float = 3600.0,
    ) -> None:
        self.uri = uri
        self.executor = executor
        self.executor_id = executor_id
        self.slots = slots
        self.recovery_interval = recovery_interval
        self.retention = retention
        self.retention_interval = retention_interval
        self._liveness: AsyncConnection[Any] | None = None
        self._client: DBOSClient | None = None

    async def run(self, stop: asyncio.Event, *, shutdown_grace: float) -> None:
        global _worker
        await migrate(self.uri)
        self._liveness = await AsyncConnection.connect(self.uri, autocommit=True)
        try:
            await self._claim_executor_id()
            _register_workflow()
            _worker = self
            # DBOS gives its logger a console handler of its own unless it already has one;
            # a null handler keeps its records flowing to ours (JSON like the rest).
            logging.getLogger("dbos").addHandler(logging.NullHandler())
            DBOS(
                config={
                    "name": APPLICATION_NAME,
                    "system_database_url": _sqlalchemy_url(self.uri),
                    "application_version": APPLICATION_VERSION,
                    "executor_id": self.executor_id,
                    "run_migrations": False,
                    # DBOS's default (20) per worker adds up fast against max_connections: the
                    # queue, status writes and the cancellation poller need a few per slot.
                    "sys_db_pool_size": self.slots + 4,
                }
            )
            # Launched inside our event loop: DBOS then runs async workflows on this loop, next
            # to the worker's database pool and graphs.
            DBOS.launch()
            await DBOS.register_queue_async(
                QUEUE_NAME,
                worker_concurrency=self.slots,
                polling_interval_sec=QUEUE_POLLING_INTERVAL_SECONDS,
                on_conflict="always_update",
            )
            self._client = await asyncio.to_thread(
                lambda: DBOSClient(
                    system_database_url=_sqlalchemy_url(self.uri),
                    application_name=APPLICATION_NAME,
                    system_database_pool_size=2,  # the reaper and the retention sweep only
                )
            )
            logger.info(
                "worker.started",
                extra={"engine": "dbos", "executor_id": self.executor_id},
            )
            chores = [
                asyncio.create_task(self._every(self.recovery_interval, self.recover_orphans)),
                asyncio.create_task(self._every(self.retention_interval, self.sweep)),
            ]
            try:
                await stop.wait()
            finally:
                for chore in chores:
                    chore.cancel()
                await asyncio.gather(*chores, return_exceptions=True)
                logger.info("worker.stopping", extra={"grace_seconds": shutdown_grace})
                if self._client is not None:
                    await asyncio.to_thread(self._client.destroy)
                    self._client = None
                # DBOS waits for active workflows with time.sleep: keep this loop free so they
                # can finish. Runs still active afterwards stay PENDING under our executor id,
                # and another worker (or our restart) continues them from their checkpoint.
                await asyncio.to_thread(
                    DBOS.destroy, workflow_completion_timeout_sec=int(shutdown_grace)
                )
        finally:
            _worker = None
            # DBOS made its thread pool this loop's default executor and has shut it down.
            asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor())
            if self._client is not None:
                await asyncio.to_thread(self._client.destroy)
            await self._liveness.close()

    async def _claim_executor_id(self) -> None:
        """Hold our executor lock; a reaper may hold it briefly while recovering our old runs."""
        assert self._liveness is not None
        try:
            await wait_for_advisory_lock(
                self._liveness,
                _EXECUTOR_LOCK_PREFIX + self.executor_id,
                limit_seconds=_EXECUTOR_LOCK_TIMEOUT_SECONDS,
            )
        except TimeoutError:
            raise ConfigurationError(
                f"another live worker uses the executor id {self.executor_id!r}; "
                "give each worker its own LGOS_WORKER_ID"
            ) from None

    async def _every(self, interval: float, chore: Any) -> None:
        while True:
            try:
                await chore()
            except Exception:
                logger.exception("worker.chore_failed", extra={"chore": chore.__name__})
            await asyncio.sleep(interval)

    async def recover_orphans(self) -> int:
        """Re-enqueue runs left PENDING by workers that died; return how many executors."""
        assert self._liveness is not None
        assert self._client is not None
        pending = await self._client.list_workflows_async(
            name=WORKFLOW_NAME,
            status="PENDING",
            app_version=APPLICATION_VERSION,
            load_input=False,
            load_output=False,
        )
        owners = {item.executor_id for item in pending if item.executor_id} - {self.executor_id}
        recovered = 0
        for owner in sorted(owners):
            lock = _EXECUTOR_LOCK_PREFIX + owner
            if not await try_advisory_lock(self._liveness, lock):
                continue  # its worker is alive
            try:
                # Re-enqueue only rows still PENDING under the dead executor (DBOS's own
                # recovery, which is idempotent against concurrent reapers).
                handles = await asyncio.to_thread(DBOS._recover_pending_workflows, [owner])
                logger.info(
                    "worker.recovered_orphans",
                    extra={"dead_executor_id": owner, "runs": len(handles)},
                )
                recovered += 1
            finally:
                await advisory_unlock(self._liveness, lock)
        return recovered

    async def sweep(self) -> int:
        assert self._client is not None
        backend = DBOSBackgroundBackend(self._client, self.executor.events)
        deleted = await backend.delete_finished(self.retention)
        if deleted:
            logger.info("worker.retention.deleted", extra={"deleted": deleted})
        return deleted
