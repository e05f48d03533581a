"""What a registry factory receives: the checkpointer, store and run coordinator to use."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from langgraph.checkpoint.memory import InMemorySaver
from langgraph.store.memory import InMemoryStore

from lgos.core.background import ResponseEventLog
from lgos.core.coordinator import InMemoryRunCoordinator, RunCoordinator
from lgos.core.idempotency import IdempotencyStore, InMemoryIdempotencyStore
from lgos.core.stored import ResponseStore
from lgos.core.stored_memory import InMemoryResponseStore
from lgos.server.settings import ServerSettings

logger = logging.getLogger("lgos.server")


@dataclass(frozen=True, slots=True)
class ServerResources:
    """Compile interrupt graphs with `checkpointer`; pass `run_coordinator` to the registry."""

    checkpointer: Any
    store: Any
    run_coordinator: RunCoordinator
    settings: ServerSettings
    # The PostgreSQL connection pool when LGOS_POSTGRES_URI is set (for engines sharing it).
    pool: Any = None
    # The event log of streamed background Responses in that database (None without one).
    events: ResponseEventLog | None = None
    # Stored Responses and Conversations (in memory when None).
    response_store: ResponseStore | None = None
    # The Idempotency-Keys of foreground creates (in memory when None).
    idempotency_store: IdempotencyStore | None = None
    # The FastAPI application being served, for a factory that adds routes of its own (None in
    # `lgos worker`, which serves nothing).
    app: Any = None


@asynccontextmanager
async def open_resources(settings: ServerSettings) -> AsyncIterator[ServerResources]:
    if settings.POSTGRES_URI:
        from lgos.integrations.postgres import open_postgres
        from lgos.integrations.postgres.idempotency import PostgresIdempotencyStore
        from lgos.integrations.postgres.stored import PostgresResponseStore

        async with open_postgres(
            settings.POSTGRES_URI,
            pool_size=settings.POSTGRES_POOL_SIZE,
            wait_seconds=settings.POSTGRES_WAIT_SECONDS,
        ) as postgres:
            yield ServerResources(
                checkpointer=postgres.checkpointer,
                store=postgres.store,
                run_coordinator=postgres.run_coordinator,
                settings=settings,
                pool=postgres.pool,
                events=postgres.events,
                response_store=PostgresResponseStore(postgres.pool, postgres.events),
                idempotency_store=PostgresIdempotencyStore(postgres.pool),
            )
        return
    logger.warning(
        "server.persistence.in_memory",
        extra={"detail": "LGOS_POSTGRES_URI is unset: paused runs end with this process"},
    )
    yield ServerResources(
        checkpointer=InMemorySaver(),
        store=InMemoryStore(),
        run_coordinator=InMemoryRunCoordinator(),
        settings=settings,
        response_store=InMemoryResponseStore(),
        idempotency_store=InMemoryIdempotencyStore(),
    )
