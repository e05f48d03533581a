"""One `lgos worker` process on DBOS: it holds a lease on its executor id, runs the queue,
takes over the runs of workers whose lease expired, and deletes old finished runs."""

from __future__ import annotations

import asyncio
import logging
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

import psycopg
from dbos import DBOS, DBOSClient
from psycopg import AsyncConnection

from lgos.background.executor import JobExecutor
from lgos.core.errors import ConfigurationError
from lgos.core.webhooks import WebhookSettings
from lgos.integrations.dbos.backend import DBOSBackgroundBackend
from lgos.integrations.dbos.internals import recover_pending_workflows
from lgos.integrations.dbos.lease import WORKER_APPLICATION_PREFIX, end_sessions, lease_lost
from lgos.integrations.dbos.names import (
    APPLICATION_NAME,
    APPLICATION_VERSION,
    QUEUE_NAME,
    QUEUE_POLLING_INTERVAL_SECONDS,
    WEBHOOK_QUEUE_NAME,
    WORKFLOW_NAME,
)
from lgos.integrations.dbos.schema import migrate, sqlalchemy_url
from lgos.integrations.dbos.wake_guard import WakeGuard
from lgos.integrations.dbos.webhooks import WEBHOOK_WORKFLOW
from lgos.integrations.dbos.workflow import WORKFLOW

logger = logging.getLogger("lgos.background.dbos")


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
        webhooks: WebhookSettings | None = None,
    ) -> None:
        self.webhooks = webhooks
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
        await migrate(self.uri)
        await self._claim_executor_id()
        guard = WakeGuard(self._lease_may_be_lost, self.executor_id)
        beating = threading.Event()
        heartbeat = threading.Thread(
            target=self._heartbeat, args=(beating,), name="lgos-heartbeat", daemon=True
        )
        heartbeat.start()
        try:
            WORKFLOW.register()
            WORKFLOW.executor = self.executor
            WEBHOOK_WORKFLOW.register()
            WEBHOOK_WORKFLOW.settings = self.webhooks
            # DBOS gives its logger a console handler of its own unless it already has one;
            # a null handler keeps its records flowing to ours (JSON like the rest).
            logging.getLogger("dbos").addHandler(logging.NullHandler())
            DBOS(
                config={
                    "name": APPLICATION_NAME,
                    "system_database_url": sqlalchemy_url(self.uri),
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
            # No concurrency limit: a delivery is a small coroutine that mostly sleeps.
            await DBOS.register_queue_async(
                WEBHOOK_QUEUE_NAME,
                polling_interval_sec=self.queue_polling_interval,
                on_conflict="always_update",
            )
            self._client = await asyncio.to_thread(
                lambda: DBOSClient(
                    system_database_url=sqlalchemy_url(self.uri),
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
            WORKFLOW.executor = None
            WEBHOOK_WORKFLOW.settings = None
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
                            await end_sessions(conn, str(row[0]))
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
                lease_lost(self.executor_id, "another worker took over this worker's runs")
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
            runs = await asyncio.to_thread(recover_pending_workflows, owner)
            logger.info(
                "worker.recovered_orphans",
                extra={"dead_executor_id": owner, "runs": runs},
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
                await end_sessions(conn, str(row[0]))
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
