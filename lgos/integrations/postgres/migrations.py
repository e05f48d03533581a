"""LangGraph's tables and LGOS's, created or upgraded by one process at a time."""

from __future__ import annotations

import asyncio
import logging

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.store.postgres.aio import AsyncPostgresStore
from psycopg import AsyncConnection
from psycopg.rows import DictRow, tuple_row

from lgos.integrations.postgres.locks import advisory_unlock, wait_for_advisory_lock
from lgos.integrations.postgres.pool import Pool

logger = logging.getLogger("lgos.postgres")

_MIGRATION_LOCK_NAME = "lgos.migrations"
_MIGRATION_LOCK_TIMEOUT_SECONDS = 600.0

# LGOS's own schema, applied in order and recorded in lgos_migrations like LangGraph's.
MIGRATIONS: tuple[str, ...] = (
    """
    CREATE TABLE IF NOT EXISTS lgos_paused_runs (
        thread_id text PRIMARY KEY,
        paused_at timestamptz NOT NULL DEFAULT now()
    )
    """,
    "CREATE INDEX IF NOT EXISTS lgos_paused_runs_paused_at_idx ON lgos_paused_runs (paused_at)",
    # The SSE events of streamed background Responses (PostgresResponseEventLog below).
    """
    CREATE TABLE IF NOT EXISTS lgos_response_events (
        run_id text NOT NULL,
        sequence_number integer NOT NULL,
        event jsonb NOT NULL,
        PRIMARY KEY (run_id, sequence_number)
    )
    """,
    # Stored Responses and Conversations (lgos.integrations.postgres.stored).
    """
    CREATE TABLE IF NOT EXISTS lgos_responses (
        id text PRIMARY KEY,
        owner_scope text NOT NULL,
        created_at bigint NOT NULL,
        record jsonb NOT NULL
    )
    """,
    "CREATE INDEX IF NOT EXISTS lgos_responses_created_at_idx ON lgos_responses (created_at)",
    """
    CREATE TABLE IF NOT EXISTS lgos_deleted_responses (
        id text PRIMARY KEY,
        deleted_at bigint NOT NULL
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS lgos_conversations (
        id text PRIMARY KEY,
        owner_scope text NOT NULL,
        updated_at bigint NOT NULL,
        record jsonb NOT NULL
    )
    """,
    """
    CREATE TABLE IF NOT EXISTS lgos_conversation_items (
        conversation_id text NOT NULL,
        position bigserial NOT NULL,
        item_id text NOT NULL,
        item jsonb NOT NULL,
        PRIMARY KEY (conversation_id, position)
    )
    """,
    """
    CREATE INDEX IF NOT EXISTS lgos_conversation_items_item_idx
    ON lgos_conversation_items (conversation_id, item_id)
    """,
    """
    CREATE TABLE IF NOT EXISTS lgos_threads (
        thread_id text PRIMARY KEY,
        used_at bigint NOT NULL
    )
    """,
    # Idempotency-Keys of foreground creates (lgos.integrations.postgres.idempotency): a
    # running claim has a token and a lease, a finished one its outcome.
    """
    CREATE TABLE IF NOT EXISTS lgos_idempotency_keys (
        owner_scope text NOT NULL,
        key text NOT NULL,
        request_digest text NOT NULL,
        token text,
        lease_until timestamptz,
        outcome jsonb,
        expires_at timestamptz NOT NULL,
        PRIMARY KEY (owner_scope, key)
    )
    """,
    """
    CREATE INDEX IF NOT EXISTS lgos_idempotency_keys_expires_at_idx
    ON lgos_idempotency_keys (expires_at)
    """,
)


async def apply_migrations(
    pool: Pool,
    saver: AsyncPostgresSaver,
    store: AsyncPostgresStore,
    *,
    lock_timeout_seconds: float = _MIGRATION_LOCK_TIMEOUT_SECONDS,
) -> None:
    """Create or upgrade LangGraph's tables and LGOS's, one process at a time.

    The lock is taken with `pg_try_advisory_lock` in a polling loop, never with the blocking
    `pg_advisory_lock`: LangGraph's migrations use CREATE INDEX CONCURRENTLY, which waits for
    every open transaction of the database, including a replica's `pg_advisory_lock` statement
    blocked on this very lock. PostgreSQL then reports a deadlock and that replica fails to
    start. A polling statement ends at once, so the index build never waits on it.
    """
    async with pool.connection() as lock_conn:
        await wait_for_advisory_lock(
            lock_conn,
            _MIGRATION_LOCK_NAME,
            limit_seconds=lock_timeout_seconds,
            on_wait=lambda: logger.info(
                "postgres.migrations.waiting", extra={"detail": "another replica migrates"}
            ),
        )
        try:
            await saver.setup()
            await store.setup()
            await _apply_own_migrations(pool)
        finally:
            await asyncio.shield(_release_migration_lock(lock_conn))


async def _release_migration_lock(conn: AsyncConnection[DictRow]) -> None:
    try:
        await advisory_unlock(conn, _MIGRATION_LOCK_NAME)
    except Exception:
        # The pool discards a broken connection, and its session's locks die with it.
        logger.warning("postgres.migrations.unlock_failed", exc_info=True)


async def _apply_own_migrations(pool: Pool) -> None:
    async with pool.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
        await cur.execute("CREATE TABLE IF NOT EXISTS lgos_migrations (v integer PRIMARY KEY)")
        await cur.execute("SELECT max(v) FROM lgos_migrations")
        row = await cur.fetchone()
        current = -1 if row is None or row[0] is None else int(row[0])
        for version in range(current + 1, len(MIGRATIONS)):
            # One transaction per step, so a crash never records a step that did not happen.
            async with conn.transaction():
                await cur.execute(MIGRATIONS[version])
                await cur.execute("INSERT INTO lgos_migrations (v) VALUES (%s)", (version,))
