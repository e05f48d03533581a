"""`lgos worker MODULE:FACTORY`: run background Responses for the configured engine.

The worker opens the same resources (`open_resources`) and registry factory as `lgos serve`, so
a graph runs with the same checkpointer, store and run coordinator in both. It logs like
`lgos serve` and stops gracefully on SIGTERM or SIGINT: it takes no new runs, lets running
ones finish for `LGOS_WORKER_SHUTDOWN_GRACE_SECONDS`, and leaves the rest to be continued by
another worker from their last checkpoint.
"""

from __future__ import annotations

import asyncio
import logging
import logging.config
import os
import signal
import socket
import uuid
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack, asynccontextmanager
from datetime import timedelta
from typing import TYPE_CHECKING

from pydantic import Field
from pydantic_settings import BaseSettings, SettingsConfigDict

from lgos.background.executor import DurableRuns, JobExecutor
from lgos.core.errors import ConfigurationError
from lgos.server.app import RegistryFactory, import_factory, open_registry, require_postgres
from lgos.server.logging import logging_config
from lgos.server.resources import open_resources
from lgos.server.settings import ServerSettings

if TYPE_CHECKING:
    from lgos.integrations.postgres.liveness import WorkerLease

logger = logging.getLogger("lgos.worker")


class WorkerSettings(BaseSettings):
    """`LGOS_WORKER_*` settings that only `lgos worker` reads."""

    model_config = SettingsConfigDict(
        env_prefix="LGOS_WORKER_", env_ignore_empty=True, frozen=True, extra="ignore"
    )

    # A stable name per worker (DBOS executor id). Unset: host name and process id.
    ID: str | None = Field(default=None, min_length=1, max_length=200)
    # How often a worker looks for workers whose lease expired (dead or stuck), to take over
    # their runs (DBOS) or free their run leases for the worker Hatchet reassigns them to.
    RECOVERY_INTERVAL_SECONDS: float = Field(default=10.0, gt=0)
    # How long running runs may finish after SIGTERM before the process exits.
    SHUTDOWN_GRACE_SECONDS: float = Field(default=20.0, ge=0)
    # How long a worker that stops making progress (dead, stopped, cut off) keeps its runs
    # before another worker takes them over (DBOS and Hatchet, on PostgreSQL). Longer than a
    # database restart takes.
    LEASE_SECONDS: float = Field(default=30.0, ge=2)
    # How often a DBOS worker looks in its queue for new runs (DBOS has no queue
    # notifications: a new run waits half of this on average before a worker picks it up).
    QUEUE_POLL_SECONDS: float = Field(default=0.05, gt=0, le=60)

    def executor_id(self) -> str:
        return self.ID or f"{socket.gethostname()}-{os.getpid()}"


def worker_resources_settings(settings: ServerSettings) -> ServerSettings:
    """Each background run holds a run lease (one pooled connection) and writes checkpoints
    (another), so a worker's pool must fit two connections per slot."""
    needed = 2 * settings.WORKER_SLOTS + 1
    if settings.POSTGRES_URI and needed > settings.POSTGRES_POOL_SIZE:
        return settings.model_copy(update={"POSTGRES_POOL_SIZE": needed})
    return settings


@asynccontextmanager
async def open_executor(
    factory: RegistryFactory, settings: ServerSettings
) -> AsyncIterator[JobExecutor]:
    """What every engine's worker runs jobs with: the same resources and registry factory as
    `lgos serve`, every background run checkpointed (`DurableRuns`), and the event log."""
    async with AsyncExitStack() as stack:
        resources = await stack.enter_async_context(open_resources(settings))
        registry = await stack.enter_async_context(open_registry(factory, resources))
        yield JobExecutor(
            registry=registry,
            durable=DurableRuns(resources.checkpointer, resources.run_coordinator),
            events=resources.events,
        )


def run_worker(registry_path: str, settings: ServerSettings) -> None:
    """Blocks until SIGTERM/SIGINT. Raises ConfigurationError for a bad setup."""
    logging.config.dictConfig(logging_config())
    factory = import_factory(registry_path)
    worker_settings = WorkerSettings()
    settings = worker_resources_settings(settings)
    if settings.BACKGROUND == "hatchet":
        from lgos.integrations.hatchet import run_hatchet_worker

        run_hatchet_worker(
            lambda: open_executor(factory, settings),
            name=worker_settings.ID or "lgos-background-worker",
            slots=settings.WORKER_SLOTS,
            webhooks=settings.webhooks(),
            lease=_worker_lease(settings, worker_settings),
            recovery_interval=worker_settings.RECOVERY_INTERVAL_SECONDS,
        )
        return
    if settings.BACKGROUND != "dbos":
        raise ConfigurationError("lgos worker needs LGOS_BACKGROUND=dbos or hatchet")
    # Checked before the registry factory runs: DBOS keeps its queue in that database.
    uri = require_postgres(settings)
    asyncio.run(_run_dbos(uri, factory, settings, worker_settings))


def _worker_lease(settings: ServerSettings, worker_settings: WorkerSettings) -> WorkerLease | None:
    """This process's lease in `lgos_workers` (a worker on PostgreSQL), named in every database
    session it opens, so a worker that takes over its runs if it gets stuck can end them."""
    if not settings.POSTGRES_URI:
        return None  # nothing durable to take over: a run dies with its worker
    from lgos.integrations.postgres.liveness import WorkerLease

    lease = WorkerLease(
        settings.POSTGRES_URI,
        worker_settings.executor_id(),
        lease_seconds=worker_settings.LEASE_SECONDS,
    )
    # libpq reads PGAPPNAME: every session of this process carries the name, pools included.
    os.environ["PGAPPNAME"] = lease.application_name
    return lease


async def _run_dbos(
    uri: str, factory: RegistryFactory, settings: ServerSettings, worker_settings: WorkerSettings
) -> None:
    from lgos.integrations.dbos import WORKER_APPLICATION_PREFIX, DBOSWorker

    incarnation = uuid.uuid4().hex[:16]
    # Every database session of this process carries its name (libpq reads PGAPPNAME), so a
    # worker that takes over our runs if we get stuck can end them, and our run leases too.
    os.environ["PGAPPNAME"] = WORKER_APPLICATION_PREFIX + incarnation
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    async with open_executor(factory, settings) as executor:
        worker = DBOSWorker(
            uri,
            executor,
            executor_id=worker_settings.executor_id(),
            slots=settings.WORKER_SLOTS,
            recovery_interval=worker_settings.RECOVERY_INTERVAL_SECONDS,
            lease_seconds=worker_settings.LEASE_SECONDS,
            queue_polling_interval=worker_settings.QUEUE_POLL_SECONDS,
            incarnation=incarnation,
            retention=timedelta(days=settings.BACKGROUND_RETENTION_DAYS),
            webhooks=settings.webhooks(),
        )
        await worker.run(stop, shutdown_grace=worker_settings.SHUTDOWN_GRACE_SECONDS)
    logger.info("worker.stopped")
