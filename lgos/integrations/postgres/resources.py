"""`open_postgres`: the pool, migrated, and everything LGOS keeps on it."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.store.postgres.aio import AsyncPostgresStore

from lgos.core.errors import ConfigurationError
from lgos.integrations.postgres.coordinator import PostgresRunCoordinator
from lgos.integrations.postgres.events import PostgresResponseEventLog
from lgos.integrations.postgres.langgraph_internals import (
    InLoopSaver,
    serialize_in_loop,
    stop_store_batcher,
    widen_saver_lock,
)
from lgos.integrations.postgres.migrations import apply_migrations
from lgos.integrations.postgres.outage import (
    POOL_RECONNECT_SECONDS,
    DatabaseWatch,
    outage_logging,
)
from lgos.integrations.postgres.pool import DEFAULT_WAIT_SECONDS, Pool, new_pool

logger = logging.getLogger("lgos.postgres")


@dataclass(frozen=True, slots=True)
class PostgresResources:
    """What `open_postgres` yields: one pool and everything LGOS keeps on it."""

    pool: Pool
    checkpointer: AsyncPostgresSaver
    store: AsyncPostgresStore
    run_coordinator: PostgresRunCoordinator
    events: PostgresResponseEventLog


@asynccontextmanager
async def open_postgres(
    uri: str, *, pool_size: int, wait_seconds: float = DEFAULT_WAIT_SECONDS
) -> AsyncIterator[PostgresResources]:
    """Open the pool, migrate under an advisory lock, and yield PostgreSQL-backed resources.

    A request waits at most `wait_seconds` for a connection; while the database is away, its
    outage is watched (and logged) once for the whole process (`outage`)."""
    if not uri:
        raise ConfigurationError("LGOS_POSTGRES_URI is not set")
    if pool_size < 2:
        raise ConfigurationError(
            "LGOS_POSTGRES_POOL_SIZE must be at least 2: a run holds one connection for its "
            "lease and needs another to write its checkpoints"
        )
    watch = DatabaseWatch(uri, lambda: pool.check())
    pool = new_pool(
        uri,
        pool_size,
        wait_seconds=wait_seconds,
        reconnect_seconds=POOL_RECONNECT_SECONDS,
        on_reconnect_failed=watch.lost,
    )
    await pool.open(wait=True)
    watching = asyncio.create_task(watch.run())
    try:
        coordinator = PostgresRunCoordinator(pool)
        if not serialize_in_loop():
            logger.warning("postgres.saver_serializes_in_threads")
        saver = InLoopSaver(pool)  # no pipeline: each call takes its own connection
        # The saver serializes all its I/O through one asyncio.Lock per instance (LangGraph
        # #7259), needed only for a single shared connection. On a pool each call checks out
        # its own connection, so let as many run as the connections leases leave free.
        widen_saver_lock(saver, max(1, pool_size - coordinator.max_leases))
        store = AsyncPostgresStore(pool)
        events = PostgresResponseEventLog(pool)
        with outage_logging(watch):
            try:
                await apply_migrations(pool, saver, store)
                logger.info(
                    "postgres.ready",
                    extra={"pool_size": pool_size, "max_leases": coordinator.max_leases},
                )
                yield PostgresResources(
                    pool=pool,
                    checkpointer=saver,
                    store=store,
                    run_coordinator=coordinator,
                    events=events,
                )
            finally:
                await events.close()
                stop_store_batcher(store)
    finally:
        watching.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watching
        await pool.close()
