"""DBOS Transact engine: background Responses as durable workflows in the user's PostgreSQL.

API processes talk plain SQL through `DBOSClient` (no DBOS runtime): submit = enqueue a
workflow whose id is the engine run id, get = read its status, input and output, cancel =
`cancel_workflow`. Workers (`lgos worker`, `LGOS_BACKGROUND=dbos`) call `DBOS.launch()` and run
the queue. The Response JSON is the workflow output and the `BackgroundJob` its input, both
stored as JSON (portable serialization), so there is no Response table of our own.

Idempotency is the workflow id: a keyed create uses `uuid5(digest)`, and DBOS returns the
existing workflow for an id already taken, on any API instance, even after it finished.

Recovery: each worker holds a lease on its executor id, a row in `lgos_workers` whose expiry
it pushes forward every `LGOS_WORKER_LEASE_SECONDS / 4` (database clock). Every worker
periodically looks for runs left PENDING by executors whose lease expired (their process died,
or is stuck: SIGSTOP, a frozen VM, a partition) and takes them over:

1. it deletes the expired row (one reaper wins);
2. it ends every database session of that worker process (their `application_name` names the
   process), which drops the run leases a stuck worker still holds;
3. it has DBOS re-enqueue the runs, which another worker continues from their checkpoint.

A worker that wakes from a stop long enough to have lost its lease exits before its event loop
resumes a graph (`_WakeGuard`; its supervisor restarts it); its heartbeat finds its row gone
too, and DBOS's ownership token refuses any result it still tries to record: the replacement's
result is the one kept. A database restart does not make a
live worker look dead: the lease outlives a restart of a few seconds, and heartbeats reconnect.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
import threading
import time
import uuid
from collections.abc import AsyncIterator, Callable
from concurrent.futures import ThreadPoolExecutor
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

import psycopg
from dbos import DBOS, DBOSClient, EnqueueOptions, WorkflowSerializationFormat
from psycopg import AsyncConnection
from psycopg.conninfo import conninfo_to_dict
from psycopg.rows import tuple_row
from pydantic import ValidationError
from pydantic_core import from_json
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
from lgos.integrations.postgres import advisory_unlock, wait_for_advisory_lock

if TYPE_CHECKING:
    from dbos._sys_db import WorkflowStatus

    from lgos.integrations.postgres import Pool

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
# How often a worker looks for new runs by default (DBOS polls its queue table; it has no
# notification for a new queued workflow). Each look is one short transaction per worker;
# a new run waits half the interval on average (`LGOS_WORKER_QUEUE_POLL_SECONDS`).
QUEUE_POLLING_INTERVAL_SECONDS = 0.05
_RUN_NAMESPACE = uuid.UUID("3f4f9a2e-55f1-4b7e-9d8a-1c2b3d4e5f60")
# The `application_name` of every database session of one worker process.
WORKER_APPLICATION_PREFIX = "lgos-worker "
# Exit status of a worker that lost its lease (sysexits' EX_TEMPFAIL: restart me).
LEASE_LOST_EXIT_STATUS = 75
_WORKERS_TABLE = """
CREATE TABLE IF NOT EXISTS lgos_workers (
    executor_id text PRIMARY KEY,
    incarnation text NOT NULL,
    expires_at timestamptz NOT NULL
)
"""
_MIGRATION_LOCK = "lgos.dbos.migrations"
_MIGRATION_LOCK_TIMEOUT_SECONDS = 600.0
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


# One run's state, input and output, read by its primary key: what a poll needs. DBOS keeps a
# workflow's input and output in side tables (older rows: in the status row itself), as its
# own `list_workflows` reads them. Written against DBOS's system schema ("dbos", which LGOS
# never renames); tests/background reads runs through it on every DBOS run they make.
_READ_RUN = """
SELECT s.status, s.name, s.serialization,
       coalesce(i.inputs, s.inputs), coalesce(o.output, s.output)
FROM dbos.workflow_status s
LEFT JOIN dbos.workflow_input i ON i.workflow_uuid = s.workflow_uuid
LEFT JOIN dbos.workflow_output o ON o.workflow_uuid = s.workflow_uuid
WHERE s.workflow_uuid = %s
"""
# How DBOS names the JSON it stores for workflows declared PORTABLE (all of LGOS's).
_PORTABLE_JSON = "portable_json"


class DBOSBackgroundBackend:
    """`BackgroundBackend` over a `DBOSClient` (API side: enqueue, read, cancel).

    With `pool` (the server's psycopg pool on the same database), a run is read with one
    indexed query on that pool instead of `DBOSClient.list_workflows`, which builds a
    SQLAlchemy query of every column, pings its connection and runs in a thread: that read
    answers every poll, and was most of the API's CPU under load.
    """

    # Capabilities (`BackgroundBackend`): it streams when given `events`; DBOS records a
    # run's end as the workflow returns, so polls need no logged result.
    results_in_log = False

    def __init__(
        self,
        client: DBOSClient,
        events: ResponseEventLog | None = None,
        pool: Pool | None = None,
    ) -> None:
        self.client = client
        # Streamed Responses' events, in the same database (`PostgresResponseEventLog`).
        self.events = events
        self.pool = pool

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
        if self.pool is not None:
            async with self.pool.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
                await cur.execute(_READ_RUN, (run_id,))
                row = await cur.fetchone()
            if row is None or row[1] != WORKFLOW_NAME:
                return None
            status, _, serialization, inputs, output = row
            if serialization == _PORTABLE_JSON:
                return _portable_run(run_id, status, inputs, output)
            # Not written by this LGOS (another format): let DBOS decode it.
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


def _portable_run(
    run_id: str, status: str, inputs: str | None, output: str | None
) -> BackgroundRun | None:
    """`to_run` for a row read directly: portable JSON is plain JSON, the arguments under
    `positionalArgs`."""
    arguments = from_json(inputs) if inputs else None
    args = arguments.get("positionalArgs") if isinstance(arguments, dict) else None
    if not isinstance(args, list) or len(args) != 2 or status not in _STATUS:
        logger.warning("background.dbos.foreign_workflow", extra={"workflow_id": run_id})
        return None
    try:
        job = BackgroundJob.model_validate(args[1])
    except ValidationError:
        logger.warning("background.dbos.foreign_workflow", extra={"workflow_id": run_id})
        return None
    run = BackgroundRun(id=run_id, job=job, status=_STATUS[status])
    return run.with_output(from_json(output) if output is not None else None)


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
            await conn.execute(_WORKERS_TABLE)
        finally:
            await advisory_unlock(conn, _MIGRATION_LOCK)


@asynccontextmanager
async def open_dbos_client(
    uri: str, events: ResponseEventLog | None = None, pool: Pool | None = None
) -> AsyncIterator[DBOSBackgroundBackend]:
    """The API side: a `DBOSBackgroundBackend` on a plain-SQL `DBOSClient` (and `pool`, the
    server's pool on the same database, for reading runs)."""
    await migrate(uri)
    client = await asyncio.to_thread(
        lambda: DBOSClient(
            system_database_url=_sqlalchemy_url(uri), application_name=APPLICATION_NAME
        )
    )
    try:
        yield DBOSBackgroundBackend(client, events, pool)
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
        lease_seconds: float = 30.0,
        queue_polling_interval: float = QUEUE_POLLING_INTERVAL_SECONDS,
        incarnation: str | None = None,
        retention_interval: float = 3600.0,
    ) -> None:
        self.uri = uri
        self.executor = executor
        self.executor_id = executor_id
        self.slots = slots
        self.recovery_interval = recovery_interval
        self.retention = retention
        self.retention_interval = retention_interval
        self.lease_seconds = lease_seconds
        self.queue_polling_interval = queue_polling_interval
        # This process, as opposed to the executor id a restarted worker reuses.
        self.incarnation = incarnation or uuid.uuid4().hex[:16]
        self._client: DBOSClient | None = None
        # When (monotonic clock) a statement that renewed our lease was sent: the lease is ours
        # until at least `lease_seconds` after that moment.
        self._lease_renewed_at = time.monotonic()

    async def run(self, stop: asyncio.Event, *, shutdown_grace: float) -> None:
        global _worker
        await migrate(self.uri)
        await self._claim_executor_id()
        guard = _WakeGuard(self._lease_may_be_lost)
        beating = threading.Event()
        heartbeat = threading.Thread(
            target=self._heartbeat, args=(beating,), name="lgos-heartbeat", daemon=True
        )
        heartbeat.start()
        try:
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
                    # Named after this process, so a reaper can end its sessions.
                    "db_engine_kwargs": {
                        "connect_args": {"application_name": self.application_name}
                    },
                }
            )
            # Launched inside our event loop: DBOS then runs async workflows on this loop, next
            # to the worker's database pool and graphs.
            DBOS.launch()
            await DBOS.register_queue_async(
                QUEUE_NAME,
                worker_concurrency=self.slots,
                polling_interval_sec=self.queue_polling_interval,
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
            guard.stop()
            beating.set()
            # DBOS made its thread pool this loop's default executor and has shut it down.
            asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor())
            await asyncio.to_thread(heartbeat.join)
            if self._client is not None:
                await asyncio.to_thread(self._client.destroy)
            await self._release_lease()

    @property
    def application_name(self) -> str:
        return WORKER_APPLICATION_PREFIX + self.incarnation

    async def _connect(self) -> AsyncConnection[Any]:
        return await AsyncConnection.connect(
            self.uri, autocommit=True, application_name=self.application_name
        )

    async def _claim_executor_id(self) -> None:
        """Take the lease on our executor id. A previous process with this id whose lease
        expired (it died, or is stuck) is fenced off first; a live one makes us wait for its
        lease to run out, then give up."""
        deadline = time.monotonic() + 2 * self.lease_seconds + 10
        async with await self._connect() as conn:
            while True:
                self._lease_renewed_at = time.monotonic()
                async with conn.transaction():
                    cursor = await conn.execute(
                        "SELECT incarnation, expires_at < now() FROM lgos_workers "
                        "WHERE executor_id = %s FOR UPDATE",
                        (self.executor_id,),
                    )
                    row = await cursor.fetchone()
                    if row is None or row[1]:
                        await conn.execute(
                            "INSERT INTO lgos_workers (executor_id, incarnation, expires_at) "
                            "VALUES (%s, %s, now() + make_interval(secs => %s)) "
                            "ON CONFLICT (executor_id) DO UPDATE SET "
                            "incarnation = excluded.incarnation, expires_at = excluded.expires_at",
                            (self.executor_id, self.incarnation, self.lease_seconds),
                        )
                        if row is not None:
                            await _end_sessions(conn, str(row[0]))
                        return
                if time.monotonic() > deadline:
                    raise ConfigurationError(
                        f"another live worker uses the executor id {self.executor_id!r}; "
                        "give each worker its own LGOS_WORKER_ID"
                    )
                await asyncio.sleep(0.5)

    def _heartbeat(self, stopped: threading.Event) -> None:
        """Keep our lease; exit the process the moment we learn it was taken from us.

        A thread with its own connection, not a task: a graph node that keeps the event loop
        busy for a while is still progress, and must not cost the worker its runs.
        """
        interval = self.lease_seconds / 4
        conn: psycopg.Connection[Any] | None = None
        # A beat that fails on an open connection is tried again at once on a new one: a
        # reaper ends a stuck worker's sessions, and the woken worker must learn that now, not
        # an interval later (while its event loop may resume a graph).
        retry_now = False
        while retry_now or not stopped.wait(interval):
            retry_now = False
            sent_at = time.monotonic()
            try:
                if conn is None or conn.closed:
                    conn = psycopg.connect(
                        self.uri,
                        autocommit=True,
                        application_name=self.application_name,
                        connect_timeout=max(2, int(interval)),
                    )
                else:
                    retry_now = True
                cursor = conn.execute(
                    "UPDATE lgos_workers SET expires_at = now() + make_interval(secs => %s) "
                    "WHERE executor_id = %s AND incarnation = %s RETURNING 1",
                    (self.lease_seconds, self.executor_id, self.incarnation),
                )
                kept = cursor.fetchone() is not None
                retry_now = False
            except Exception as error:
                # The database is away (a restart, say): keep running, try again soon. The
                # lease outlives a short outage; after a long one we learn whether it held.
                logger.warning(
                    "worker.heartbeat_failed", extra={"error.type": type(error).__qualname__}
                )
                if conn is not None:
                    conn.close()
                conn = None
                continue
            if not kept:
                _lease_lost(self.executor_id, "another worker took over this worker's runs")
            self._lease_renewed_at = sent_at
        if conn is not None:
            conn.close()

    def _lease_may_be_lost(self) -> bool:
        """True once our lease could have expired on the database's clock.

        A worker that keeps beating renews it every quarter lease; a margin of one more quarter
        covers the database's clock running a little faster than ours.
        """
        return time.monotonic() - self._lease_renewed_at > 0.75 * self.lease_seconds

    async def _release_lease(self) -> None:
        try:
            async with await self._connect() as conn:
                await conn.execute(
                    "DELETE FROM lgos_workers WHERE executor_id = %s AND incarnation = %s",
                    (self.executor_id, self.incarnation),
                )
        except Exception as error:
            # The lease simply expires.
            logger.warning(
                "worker.lease_release_failed", extra={"error.type": type(error).__qualname__}
            )

    async def _every(self, interval: float, chore: Any) -> None:
        while True:
            try:
                await chore()
            except Exception:
                logger.exception("worker.chore_failed", extra={"chore": chore.__name__})
            await asyncio.sleep(interval)

    async def recover_orphans(self) -> int:
        """Take over the runs of workers whose lease expired; return how many workers."""
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
            if not await self._fence(owner):
                continue  # its worker is alive (or another reaper has it)
            # Re-enqueue only rows still PENDING under the dead executor (DBOS's own
            # recovery, which is idempotent against concurrent reapers).
            handles = await asyncio.to_thread(DBOS._recover_pending_workflows, [owner])
            logger.info(
                "worker.recovered_orphans",
                extra={"dead_executor_id": owner, "runs": len(handles)},
            )
            recovered += 1
        return recovered

    async def _fence(self, owner: str) -> bool:
        """Claim a worker whose lease expired and end its sessions; False while it lives."""
        async with await self._connect() as conn:
            cursor = await conn.execute(
                "DELETE FROM lgos_workers WHERE executor_id = %s AND expires_at < now() "
                "RETURNING incarnation",
                (owner,),
            )
            row = await cursor.fetchone()
            if row is not None:
                await _end_sessions(conn, str(row[0]))
                return True
            cursor = await conn.execute(
                "SELECT 1 FROM lgos_workers WHERE executor_id = %s", (owner,)
            )
            # No lease at all: its reaper died between claiming it and recovering its runs.
            return await cursor.fetchone() is None

    async def sweep(self) -> int:
        assert self._client is not None
        backend = DBOSBackgroundBackend(self._client, self.executor.events)
        deleted = await backend.delete_finished(self.retention)
        if deleted:
            logger.info("worker.retention.deleted", extra={"deleted": deleted})
        return deleted


async def _end_sessions(conn: AsyncConnection[Any], incarnation: str) -> None:
    """End every session of one (dead or stuck) worker process: its run leases go with them."""
    cursor = await conn.execute(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE application_name = %s AND pid <> pg_backend_pid()",
        (WORKER_APPLICATION_PREFIX + incarnation,),
    )
    row = await cursor.fetchone()
    logger.info(
        "worker.fenced",
        extra={"incarnation": incarnation, "sessions_ended": int(row[0]) if row else 0},
    )


def _lease_lost(executor_id: str, reason: str) -> None:
    logger.critical("worker.lease_lost", extra={"executor_id": executor_id, "detail": reason})
    logging.shutdown()
    # At once: no cleanup that could write on behalf of runs another worker now owns.
    os._exit(LEASE_LOST_EXIT_STATUS)


class _WakeGuard:
    """Exits the process when it wakes from a stop (SIGSTOP, a frozen VM) that may have cost it
    its lease, before its event loop resumes a graph whose run another worker now owns.

    Two ways to notice the stop, for the two ways to be stopped: `SIGCONT`, whose handler
    runs on the main thread (the event loop's) before any more of its Python code; and, for a
    freeze that sends no signal, a thread that sees the clock jump between its ticks
    (CLOCK_MONOTONIC keeps counting while the process is stopped). Either one then asks whether
    the lease may have expired meanwhile (`lease_may_be_lost`): a stop shorter than that costs
    nothing. The heartbeat would find out too, but only at its next beat.

    "Before any more of its Python code" needs the kernel to deliver `SIGCONT` to the main
    thread: delivered to another thread, the handler waits until that thread is scheduled
    while the main thread already runs on. So every thread started while the guard is up blocks
    `SIGCONT` (`_block_sigcont_in_new_threads`); the main thread is then the only one that
    takes it, as it comes out of the stop. A thread started before the guard could still take
    it; the worker starts the guard before DBOS, its pools and the heartbeat.
    """

    TICK_SECONDS = 0.5

    def __init__(self, lease_may_be_lost: Callable[[], bool]) -> None:
        self._lease_may_be_lost = lease_may_be_lost
        self._stopped = threading.Event()
        self._previous_handler: Any = None
        self._previous_thread_profile: Any = None
        if threading.current_thread() is threading.main_thread():
            self._previous_handler = signal.signal(signal.SIGCONT, self._on_continue)
            self._previous_thread_profile = _block_sigcont_in_new_threads()
        self._thread = threading.Thread(target=self._watch, name="lgos-wake-guard", daemon=True)
        self._thread.start()

    def _check(self, how: str) -> None:
        if self._lease_may_be_lost():
            _lease_lost("", f"this process was stopped ({how}) for long enough to lose its lease")

    def _on_continue(self, signum: int, frame: object) -> None:
        self._check("SIGCONT")

    def _watch(self) -> None:
        last = time.monotonic()
        while not self._stopped.wait(self.TICK_SECONDS):
            now = time.monotonic()
            if now - last > 4 * self.TICK_SECONDS:
                self._check("the clock jumped")
            last = now

    def stop(self) -> None:
        self._stopped.set()
        if self._previous_handler is not None:
            threading.setprofile(self._previous_thread_profile)
            signal.signal(signal.SIGCONT, self._previous_handler)


def _block_sigcont_in_new_threads() -> Any:
    """Make every thread the `threading` module starts from now on block `SIGCONT` as its
    first act; return the thread profile function this replaces.

    Python has no hook for a thread's start but its profile function, which a new thread
    installs before its first call: ours blocks the signal, then hands the thread back to the
    previous profile function, if any (a profiler keeps working).
    """
    previous = threading.getprofile()

    def block_sigcont(frame: Any, event: Any, arg: Any) -> Any:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCONT})
        sys.setprofile(previous)
        return previous(frame, event, arg) if previous is not None else None

    threading.setprofile(block_sigcont)
    return previous
