"""One `lgos worker` process on DBOS: it holds a lease on its executor id, runs the queue,
takes over the runs of workers whose lease expired, and deletes old finished runs."""

from __future__ import annotations

import asyncio
import logging
from concurrent.futures import ThreadPoolExecutor
from datetime import timedelta
from typing import Any

from dbos import DBOS, DBOSClient

from lgos.background.executor import JobExecutor
from lgos.core.webhooks import WebhookSettings
from lgos.integrations.dbos.backend import DBOSBackgroundBackend
from lgos.integrations.dbos.internals import recover_pending_workflows
from lgos.integrations.dbos.names import (
    APPLICATION_NAME,
    APPLICATION_VERSION,
    QUEUE_NAME,
    QUEUE_POLLING_INTERVAL_SECONDS,
    WEBHOOK_QUEUE_NAME,
    WORKFLOW_NAME,
)
from lgos.integrations.dbos.schema import migrate, sqlalchemy_url
from lgos.integrations.dbos.webhooks import WEBHOOK_WORKFLOW
from lgos.integrations.dbos.workflow import WORKFLOW
from lgos.integrations.postgres.liveness import WorkerLease
from lgos.integrations.postgres.wake_guard import WakeGuard

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
        self.lease = WorkerLease(
            uri, executor_id, lease_seconds=lease_seconds, incarnation=incarnation
        )
        self.incarnation = self.lease.incarnation
        self._client: DBOSClient | None = None

    async def run(self, stop: asyncio.Event, *, shutdown_grace: float) -> None:
        await migrate(self.uri)
        await self.lease.claim()
        guard = WakeGuard(self.lease.may_be_lost, self.executor_id)
        self.lease.start_heartbeat()
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
            # DBOS made its thread pool this loop's default executor and has shut it down.
            asyncio.get_running_loop().set_default_executor(ThreadPoolExecutor())
            await asyncio.to_thread(self.lease.stop_heartbeat)
            if self._client is not None:
                await asyncio.to_thread(self._client.destroy)
            await self.lease.release()

    @property
    def application_name(self) -> str:
        return self.lease.application_name

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
            if not await self.lease.fence(owner):
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

    async def sweep(self) -> int:
        assert self._client is not None
        backend = DBOSBackgroundBackend(self._client, self.executor.events)
        deleted = await backend.delete_finished(self.retention)
        if deleted:
            logger.info("worker.retention.deleted", extra={"deleted": deleted})
        return deleted
