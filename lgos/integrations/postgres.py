"""PostgreSQL persistence: LangGraph's saver and store and the run coordinator on one pool.

With `LGOS_POSTGRES_URI` set, paused runs survive restarts and are shared by every replica:
the checkpoints live in LangGraph's tables, the pause index in `lgos_paused_runs`, and the
single-flight lease of a run is a session-level advisory lock, so it vanishes with the session
of a process that dies.

Pool budget (`LGOS_POSTGRES_POOL_SIZE` = N connections per process): a lease keeps one
connection for as long as its run executes, so leases may take at most `N // 2` of them; the
rest serve checkpoint and store I/O, which a running graph needs while it holds its lease.
Without that bound, N concurrent runs would hold every connection and wait forever for one
more to write their checkpoints.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import select
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager, contextmanager
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.store.postgres.aio import AsyncPostgresStore
from psycopg import AsyncConnection, pq
from psycopg.rows import DictRow, dict_row, tuple_row
from psycopg.types.json import Jsonb
from psycopg_pool import AsyncConnectionPool

from lgos.core.errors import ConfigurationError, LgosError, RunBusyError

__all__ = [
    "PostgresResources",
    "PostgresResponseEventLog",
    "PostgresRunCoordinator",
    "RunCapacityError",
    "advisory_unlock",
    "apply_migrations",
    "open_postgres",
    "try_advisory_lock",
    "wait_for_advisory_lock",
]

logger = logging.getLogger("lgos.postgres")

Pool = AsyncConnectionPool[AsyncConnection[DictRow]]

# Advisory locks live in one namespace per database, shared with every other application in
# it. Keys are hashed from a prefixed name so LGOS's keys do not collide with theirs.
_RUN_LOCK_PREFIX = "lgos.run:"
_MIGRATION_LOCK_NAME = "lgos.migrations"
_TRY_LOCK = "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))"
_UNLOCK = "SELECT pg_advisory_unlock(hashtextextended(%s, 0))"
# Taking a lease is one round trip: the lock, and (when it was free) the run's row in the
# index. A leased run enters the index when it starts, unless it is there already (a resume
# keeps the time it paused). A process killed mid-run never reaches its cleanup; this row is
# how the expiry sweep still finds the checkpoint it left behind. The INSERT reads the lock's
# result, so PostgreSQL evaluates the lock first.
_LOCK_AND_RECORD_RUN = """
WITH attempt AS (SELECT pg_try_advisory_lock(hashtextextended(%(lock)s, 0)) AS locked),
recorded AS (
    INSERT INTO lgos_paused_runs (thread_id, paused_at)
    SELECT %(key)s, now() FROM attempt WHERE locked
    ON CONFLICT (thread_id) DO NOTHING
    RETURNING true
)
SELECT (SELECT locked FROM attempt), EXISTS (SELECT FROM recorded)
"""
# Releasing is one round trip too. A row this lease added is kept only when the run left a
# checkpoint that nobody else will delete (its cleanup failed). A stale answer to an expired
# run creates no checkpoint, so it leaves no row behind.
_FORGET_UNUSED_RUN_AND_UNLOCK = """
WITH forgotten AS (
    DELETE FROM lgos_paused_runs WHERE thread_id = %(key)s
    AND NOT EXISTS (SELECT FROM checkpoints WHERE thread_id = %(key)s)
)
SELECT pg_advisory_unlock(hashtextextended(%(lock)s, 0))
"""
_MARK_PAUSED = (
    "INSERT INTO lgos_paused_runs (thread_id, paused_at) VALUES (%s, now()) "
    "ON CONFLICT (thread_id) DO UPDATE SET paused_at = excluded.paused_at"
)
_MARK_DONE = "DELETE FROM lgos_paused_runs WHERE thread_id = %s"
# A lease's holder records the pause (or the end) with the release, in the same round trip.
_MARK_PAUSED_AND_UNLOCK = """
WITH paused AS (
    INSERT INTO lgos_paused_runs (thread_id, paused_at) VALUES (%(key)s, now())
    ON CONFLICT (thread_id) DO UPDATE SET paused_at = excluded.paused_at
)
SELECT pg_advisory_unlock(hashtextextended(%(lock)s, 0))
"""
_MARK_DONE_AND_UNLOCK = """
WITH done AS (DELETE FROM lgos_paused_runs WHERE thread_id = %(key)s)
SELECT pg_advisory_unlock(hashtextextended(%(lock)s, 0))
"""
_SETTLE_AND_UNLOCK = {"paused": _MARK_PAUSED_AND_UNLOCK, "done": _MARK_DONE_AND_UNLOCK}

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
    # Stored Responses and Conversations (lgos.integrations.postgres_stored).
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
)

_LOCK_POLL_SECONDS = 0.2
_MIGRATION_LOCK_TIMEOUT_SECONDS = 600.0
# How often a reader of a PostgreSQL event log re-reads it while its process cannot listen
# for notifications (its LISTEN session is being re-established).
_EVENT_POLL_SECONDS = 0.1
_EVENTS_CHANNEL = "lgos_response_events"
_LISTEN_RETRY_SECONDS = 0.5
_LISTEN_RETRY_MAX_SECONDS = 5.0
# One statement inserts the events and notifies their readers, so a notification goes out
# exactly when events it announces are committed (and only when some were new).
_APPEND_EVENTS = f"""
WITH added AS (
    INSERT INTO lgos_response_events (run_id, sequence_number, event)
    SELECT %(run_id)s, number, event
    FROM unnest(%(numbers)s::integer[], %(events)s::jsonb[]) AS batch(number, event)
    ON CONFLICT DO NOTHING
    RETURNING 1
)
SELECT pg_notify('{_EVENTS_CHANNEL}', %(run_id)s) WHERE EXISTS (SELECT FROM added)
"""
_DEFAULT_LEASE_WAIT_SECONDS = 30.0


class RunCapacityError(LgosError):
    """Every lease slot of this process is taken; a retry later (or elsewhere) may succeed."""

    status_code = 503
    error_type = "server_error"

    def __init__(self) -> None:
        super().__init__(
            "The server is running as many runs of pausable graphs as its database pool allows; "
            "try again shortly.",
            code="run_capacity_exhausted",
        )


class PostgresRunCoordinator:
    """Run leases as session advisory locks, and the pause index as a table.

    A lease takes a connection from `pool`, holds `pg_try_advisory_lock` on it for as long as
    the run executes, then unlocks and returns the connection, even when the holder is
    cancelled. At most `max_leases` leases exist at once per process (default: half the
    pool); a further lease waits up to `lease_wait_seconds` for a slot, then fails with
    `RunCapacityError` (503, which clients retry).

    The index holds every run that is paused or executing: a run enters it when it first takes
    its lease, `mark_paused` restarts its clock, `mark_done` removes it. So a run whose process
    died mid-execution expires like an abandoned pause instead of leaking its checkpoint (a
    running run is never swept: the sweep skips leased runs). Times come from the database
    clock (`now()`), so replicas with skewed clocks agree on which pauses are old.

    Under a lease this process holds, `mark_paused` and `mark_done` are written by the
    statement that releases the lease (one round trip less each; nobody else can act on the
    run before that release anyway). A process that dies before the release leaves the row
    its lease added, which the sweep finds like any other.
    """

    def __init__(
        self,
        pool: Pool,
        *,
        max_leases: int | None = None,
        lease_wait_seconds: float = _DEFAULT_LEASE_WAIT_SECONDS,
    ) -> None:
        if max_leases is None:
            max_leases = max(1, pool.max_size // 2)
        if max_leases < 1:
            raise ValueError("max_leases must be at least 1")
        self._pool = pool
        self.max_leases = max_leases
        self._lease_wait_seconds = lease_wait_seconds
        self._slots = asyncio.Semaphore(max_leases)
        # Runs whose index row this process added when leasing them and that have neither
        # paused nor finished since (keys are exclusive while leased, so a set suffices).
        self._unsettled: set[str] = set()
        # The connection each lease this process holds sits on.
        self._held: dict[str, AsyncConnection[DictRow]] = {}
        # Held runs that paused or ended: written to the index by their release.
        self._settled: dict[str, str] = {}

    def lease(self, key: str) -> AbstractAsyncContextManager[None]:
        return self._lease(key)

    @asynccontextmanager
    async def _lease(self, key: str) -> AsyncIterator[None]:
        lock_name = _RUN_LOCK_PREFIX + key
        try:
            async with asyncio.timeout(self._lease_wait_seconds):
                await self._slots.acquire()
        except TimeoutError:
            raise RunCapacityError() from None
        try:
            conn = await self._lock(key, lock_name)
        except BaseException:
            self._slots.release()
            raise
        try:
            yield
        finally:
            # Shielded: a cancelled holder must still unlock, or the run stays busy until
            # the connection dies. The slot is given back only once the connection is.
            await asyncio.shield(self._unlock(conn, key, lock_name))

    async def _lock(self, key: str, lock_name: str) -> AsyncConnection[DictRow]:
        conn = await self._pool.getconn()
        try:
            async with conn.cursor(row_factory=tuple_row) as cursor:
                await cursor.execute(_LOCK_AND_RECORD_RUN, {"lock": lock_name, "key": key})
                row = await cursor.fetchone()
        except BaseException:
            # Interrupted mid-query we cannot tell whether the lock was taken: closing the
            # session drops it either way.
            await asyncio.shield(self._discard(conn))
            raise
        locked, recorded = (bool(row[0]), bool(row[1])) if row else (False, False)
        if not locked:
            await asyncio.shield(self._pool.putconn(conn))
            raise RunBusyError()
        if recorded:
            self._unsettled.add(key)
        self._held[key] = conn
        return conn

    async def _unlock(self, conn: AsyncConnection[DictRow], key: str, lock_name: str) -> None:
        self._held.pop(key, None)
        settled = self._settled.pop(key, None)
        try:
            unlocked = False
            try:
                async with conn.cursor(row_factory=tuple_row) as cursor:
                    if settled is not None:
                        await cursor.execute(
                            _SETTLE_AND_UNLOCK[settled], {"lock": lock_name, "key": key}
                        )
                    elif key in self._unsettled:
                        self._unsettled.discard(key)
                        await cursor.execute(
                            _FORGET_UNUSED_RUN_AND_UNLOCK, {"lock": lock_name, "key": key}
                        )
                    else:
                        await cursor.execute(_UNLOCK, (lock_name,))
                    row = await cursor.fetchone()
                unlocked = bool(row and row[0])
            except Exception as error:
                # A row left behind is removed by the sweep after the TTL: harmless.
                logger.warning(
                    "run_lease.unlock_failed", extra={"error.type": type(error).__qualname__}
                )
            if not unlocked:
                # Never put a connection that may still hold a lease back into the pool.
                await self._discard(conn)
            else:
                await self._pool.putconn(conn)
            if settled == "paused" and not unlocked:
                # The pause must restart the run's clock, or it could expire early: try again
                # on another connection (a lost "done" only leaves a row the sweep removes).
                await self._mark_quietly(key)
        finally:
            self._slots.release()

    async def _mark_quietly(self, key: str) -> None:
        try:
            async with self._pool.connection() as conn:
                await conn.execute(_MARK_PAUSED, (key,))
        except Exception as error:
            logger.warning(
                "run_lease.mark_paused_failed", extra={"error.type": type(error).__qualname__}
            )

    async def _discard(self, conn: AsyncConnection[DictRow]) -> None:
        try:
            await conn.close()
        finally:
            # The pool replaces a closed connection instead of reusing it.
            await self._pool.putconn(conn)

    def leased_fresh(self, key: str) -> bool:
        # The lease added the run's index row: there was none, and every execution keeps one
        # from its start until it ends cleanly (a dead worker's stays), so none left work.
        return key in self._unsettled

    async def mark_paused(self, key: str) -> None:
        await self._settle(key, "paused", _MARK_PAUSED)

    async def mark_done(self, key: str) -> None:
        await self._settle(key, "done", _MARK_DONE)

    async def _settle(self, key: str, settled: str, statement: str) -> None:
        """With the release when this process holds the lease (the callers do), else now."""
        self._unsettled.discard(key)
        if key in self._held:
            self._settled[key] = settled
            return
        async with self._pool.connection() as conn:
            await conn.execute(statement, (key,))

    async def paused_before(self, cutoff: datetime, limit: int) -> list[str]:
        async with self._pool.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(
                "SELECT thread_id FROM lgos_paused_runs WHERE paused_at < %s "
                "ORDER BY paused_at, thread_id LIMIT %s",
                (cutoff, limit),
            )
            return [str(row[0]) for row in await cur.fetchall()]

    async def paused_at(self, key: str) -> datetime | None:
        async with self._pool.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute("SELECT paused_at FROM lgos_paused_runs WHERE thread_id = %s", (key,))
            row = await cur.fetchone()
        if row is None:
            return None
        paused: datetime = row[0]
        return paused


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


async def try_advisory_lock(conn: AsyncConnection[Any], name: str) -> bool:
    """Take the session advisory lock `name` if it is free; never wait."""
    async with conn.cursor(row_factory=tuple_row) as cursor:
        await cursor.execute(_TRY_LOCK, (name,))
        row = await cursor.fetchone()
    return bool(row and row[0])


async def advisory_unlock(conn: AsyncConnection[Any], name: str) -> bool:
    """Release the session advisory lock `name`; False when this session did not hold it."""
    async with conn.cursor(row_factory=tuple_row) as cursor:
        await cursor.execute(_UNLOCK, (name,))
        row = await cursor.fetchone()
    return bool(row and row[0])


async def wait_for_advisory_lock(
    conn: AsyncConnection[Any],
    name: str,
    *,
    limit_seconds: float,
    on_wait: Callable[[], None] | None = None,
) -> None:
    """Poll for the session advisory lock `name`; raise TimeoutError after `limit_seconds`.

    Polling, never the blocking `pg_advisory_lock`: see `apply_migrations` for why a blocked
    statement can deadlock another process's migrations. `on_wait` runs once, when the lock
    was not free at the first try.
    """
    deadline = time.monotonic() + limit_seconds
    waited = False
    while not await try_advisory_lock(conn, name):
        if time.monotonic() >= deadline:
            raise TimeoutError(f"another process held the {name!r} lock for {limit_seconds:.0f}s")
        if not waited and on_wait is not None:
            on_wait()
        waited = True
        await asyncio.sleep(_LOCK_POLL_SECONDS)


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


def _connection_kwargs() -> dict[str, Any]:
    return {
        # LangGraph's migrations use CREATE INDEX CONCURRENTLY (not allowed in a transaction),
        # and every checkpoint write should commit on its own.
        "autocommit": True,
        # What LangGraph's saver and store expect from the connections they are given.
        "row_factory": dict_row,
        # Prepare statements on first use (LangGraph's documented value). Transaction-mode
        # poolers (PgBouncer, Supavisor) are unsupported anyway: leases are session locks.
        "prepare_threshold": 0,
    }


@dataclass(frozen=True, slots=True)
class PostgresResources:
    """What `open_postgres` yields: one pool and everything LGOS keeps on it."""

    pool: Pool
    checkpointer: AsyncPostgresSaver
    store: AsyncPostgresStore
    run_coordinator: PostgresRunCoordinator
    events: PostgresResponseEventLog


@asynccontextmanager
async def open_postgres(uri: str, *, pool_size: int) -> AsyncIterator[PostgresResources]:
    """Open the pool, migrate under an advisory lock, and yield PostgreSQL-backed resources."""
    if not uri:
        raise ConfigurationError("LGOS_POSTGRES_URI is not set")
    if pool_size < 2:
        raise ConfigurationError(
            "LGOS_POSTGRES_POOL_SIZE must be at least 2: a run holds one connection for its "
            "lease and needs another to write its checkpoints"
        )
    pool: Pool = AsyncConnectionPool(
        uri,
        min_size=pool_size,
        max_size=pool_size,
        kwargs=_connection_kwargs(),
        # Each checkout is checked first (a round trip only when the server said something to
        # the idle session), so connections a database restart killed are replaced instead of
        # failing the request or run that drew them.
        check=lambda conn: _check_or_sweep(pool, conn),
        open=False,
        name="lgos",
    )
    await pool.open(wait=True)
    try:
        coordinator = PostgresRunCoordinator(pool)
        saver = AsyncPostgresSaver(pool)  # no pipeline: each call takes its own connection
        # The saver serializes all its I/O through one asyncio.Lock per instance (LangGraph
        # #7259), needed only for a single shared connection. On a pool each call checks out
        # its own connection, so let as many run as the connections leases leave free.
        saver.lock = asyncio.Semaphore(max(1, pool_size - coordinator.max_leases))  # type: ignore[assignment]
        store = AsyncPostgresStore(pool)
        events = PostgresResponseEventLog(pool)
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
            _stop_store_batcher(store)
    finally:
        await pool.close()


async def _check_or_sweep(pool: Pool, conn: AsyncConnection[DictRow]) -> None:
    """psycopg_pool's check, only when the idle session has heard from the server; plus: when
    one idle connection is dead, check them all.

    A session the server ended (a restart, `pg_terminate_backend`) is told so: the server
    sends its FATAL notice and closes the socket, which makes the idle socket readable. A
    silent socket is a live session as far as a round trip could tell, so it is handed out
    without one (a checkout used to cost a `SELECT` round trip: a third of a review's
    queries). After a database restart every idle connection is dead, and the pool tries them
    one by one with a growing pause between tries (1 s, 2 s, 4 s ...): with ten of them a
    request times out before reaching a live one. Sweeping the idle ones at the first failure
    replaces them all.
    """
    if conn.pgconn.status == pq.ConnStatus.OK and not _readable(conn.pgconn.socket):
        return
    try:
        await AsyncConnectionPool.check_connection(conn)
    except Exception:
        sweep = asyncio.create_task(pool.check())
        _SWEEPS.add(sweep)
        sweep.add_done_callback(_SWEEPS.discard)
        raise


def _readable(fd: int) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLERR | select.POLLHUP)
    return bool(poller.poll(0))


_SWEEPS: set[asyncio.Task[None]] = set()


def _stop_store_batcher(store: AsyncPostgresStore) -> None:
    # The store batches operations in a task it starts itself and only cancels when garbage
    # collected; cancel it before the pool closes so it cannot run against a closed pool.
    task = getattr(store, "_task", None)
    if task is not None:
        task.cancel()


class PostgresResponseEventLog:
    """The log in table `lgos_response_events` (created by LGOS's migrations) on the server's
    pool.

    Every append notifies channel `lgos_response_events` with the run id, in the statement
    that inserts the events (so the notification goes out when they are committed). A process
    that tails streams listens on one connection of its own, opened at its first wait, and
    wakes the tails of the run it hears about: an event reaches its readers a round trip after
    it was written, and an idle tail costs no queries. While that connection is down (a
    database restart) the tails poll every `poll_interval` until it is back.
    """

    def __init__(self, pool: Pool, poll_interval: float = _EVENT_POLL_SECONDS) -> None:
        self.pool = pool
        self.poll_interval = poll_interval
        self._listener: _EventListener | None = None

    async def append(self, run_id: str, events: Sequence[dict[str, Any]]) -> None:
        if not events:
            return
        async with self.pool.connection() as conn:
            await conn.execute(
                _APPEND_EVENTS,
                {
                    "run_id": run_id,
                    "numbers": [int(event["sequence_number"]) for event in events],
                    "events": [Jsonb(event) for event in events],
                },
            )

    async def read(self, run_id: str, after: int = -1) -> list[dict[str, Any]]:
        async with self.pool.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(
                "SELECT event FROM lgos_response_events "
                "WHERE run_id = %s AND sequence_number > %s ORDER BY sequence_number",
                (run_id, after),
            )
            return [row[0] for row in await cur.fetchall()]

    async def last(self, run_id: str) -> dict[str, Any] | None:
        async with self.pool.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(
                "SELECT event FROM lgos_response_events WHERE run_id = %s "
                "ORDER BY sequence_number DESC LIMIT 1",
                (run_id,),
            )
            row = await cur.fetchone()
        return None if row is None else dict(row[0])

    async def wait(self, run_id: str, after: int, patience: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + patience
        if self._listener is None:
            # The pool's own connection string (a pool opened with a callable one gives None:
            # its listener then never connects, and tails poll).
            conninfo = self.pool.conninfo
            self._listener = _EventListener(conninfo if isinstance(conninfo, str) else None)
        listener = self._listener
        listener.start()
        with listener.waiting(run_id) as woken:
            # Checked once the waiter is in place: an event written between the caller's last
            # read and now sent its notification before anyone listened for it.
            while not await self._has_events_after(run_id, after):
                remaining = deadline - loop.time()
                if remaining <= 0:
                    return
                timeout = remaining if listener.listening else min(remaining, self.poll_interval)
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(woken.wait(), timeout)
                if woken.is_set():
                    return  # notified (or the listener changed state): the caller reads

    async def _has_events_after(self, run_id: str, after: int) -> bool:
        async with self.pool.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(
                "SELECT 1 FROM lgos_response_events "
                "WHERE run_id = %s AND sequence_number > %s LIMIT 1",
                (run_id, after),
            )
            return await cur.fetchone() is not None

    async def close(self) -> None:
        """Stop listening (the pool's owner calls this before closing the pool)."""
        if self._listener is not None:
            await self._listener.stop()
            self._listener = None

    async def delete(self, run_ids: Iterable[str]) -> None:
        ids = list(run_ids)
        if not ids:
            return
        async with self.pool.connection() as conn, conn.cursor() as cur:
            await cur.execute("DELETE FROM lgos_response_events WHERE run_id = ANY(%s)", (ids,))


class _EventListener:
    """One LISTEN session per process, shared by every tail: wakes the waiters of the run a
    notification names. It reconnects by itself; while it is away `listening` is False, and
    every waiter is woken whenever that changes, so none sleeps through the gap."""

    def __init__(self, conninfo: str | None) -> None:
        self.conninfo = conninfo
        self.listening = False
        self._waiters: dict[str, set[asyncio.Event]] = {}
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        if self.conninfo is not None and (self._task is None or self._task.done()):
            self._task = asyncio.create_task(self._listen(), name="lgos-event-listener")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    @contextmanager
    def waiting(self, run_id: str) -> Iterator[asyncio.Event]:
        woken = asyncio.Event()
        waiters = self._waiters.setdefault(run_id, set())
        waiters.add(woken)
        try:
            yield woken
        finally:
            waiters.discard(woken)
            if not waiters:
                self._waiters.pop(run_id, None)

    def _wake(self, run_id: str) -> None:
        for woken in self._waiters.get(run_id, ()):
            woken.set()

    def _wake_all(self) -> None:
        for waiters in self._waiters.values():
            for woken in waiters:
                woken.set()

    async def _listen(self) -> None:
        assert self.conninfo is not None
        pause = _LISTEN_RETRY_SECONDS
        while True:
            try:
                async with await AsyncConnection.connect(self.conninfo, autocommit=True) as conn:
                    await conn.execute(f"LISTEN {_EVENTS_CHANNEL}")
                    self.listening = True
                    self._wake_all()  # events written while we were deaf: read them now
                    pause = _LISTEN_RETRY_SECONDS
                    async for notification in conn.notifies():
                        self._wake(notification.payload)
            except Exception as error:
                logger.warning(
                    "events.listen_failed", extra={"error.type": type(error).__qualname__}
                )
            finally:
                if self.listening:
                    self.listening = False
                    self._wake_all()  # back to polling until the session is back
            await asyncio.sleep(pause)
            pause = min(pause * 2, _LISTEN_RETRY_MAX_SECONDS)
