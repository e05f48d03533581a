"""Run leases as session advisory locks, and the pause index as a table."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import datetime
from typing import Any

from psycopg import AsyncConnection
from psycopg.rows import DictRow, tuple_row

from lgos.core.errors import (
    RunBusyError,
    ServiceUnavailableError,
    is_transient_database_error,
)
from lgos.integrations.postgres.events import PostgresResponseEventLog, append_statement
from lgos.integrations.postgres.langgraph_internals import saver_pool
from lgos.integrations.postgres.locks import UNLOCK
from lgos.integrations.postgres.pool import Pool

logger = logging.getLogger("lgos.postgres")

_RUN_LOCK_PREFIX = "lgos.run:"
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
# A run that finished under a lease this process holds: its thread's checkpoints go with the
# release too (LangGraph's saver's three tables, as its `adelete_thread` deletes them), one
# round trip after the holder's last step instead of one more before it. The lock is free
# before the deletes commit; whoever takes it at once finds the checkpoint of a finished run,
# as a run's next execution did when its worker died after the end: a durable worker logs the
# end first (`lgos.background.executor`) and returns it.
_FINISH_AND_UNLOCK = """
WITH done AS (DELETE FROM lgos_paused_runs WHERE thread_id = %(key)s),
checkpoints AS (DELETE FROM checkpoints WHERE thread_id = %(key)s),
blobs AS (DELETE FROM checkpoint_blobs WHERE thread_id = %(key)s),
writes AS (DELETE FROM checkpoint_writes WHERE thread_id = %(key)s)
SELECT pg_advisory_unlock(hashtextextended(%(lock)s, 0))
"""
_SETTLE_AND_UNLOCK = {
    "paused": _MARK_PAUSED_AND_UNLOCK,
    "done": _MARK_DONE_AND_UNLOCK,
    "finished": _FINISH_AND_UNLOCK,
}
_DEFAULT_LEASE_WAIT_SECONDS = 30.0


class RunCapacityError(ServiceUnavailableError):
    """Every lease slot of this process is taken; a retry later (or elsewhere) may succeed."""

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
        # Held runs' last events (their logged end), appended by their release.
        self._logged: dict[str, tuple[str, dict[str, Any]]] = {}

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
        logged = self._logged.pop(key, None)
        try:
            unlocked = False
            try:
                async with conn.cursor(row_factory=tuple_row) as cursor:
                    if logged is not None:
                        # One round trip (a pipeline, one sync): the events committed in a
                        # transaction of their own, then the release. A statement's advisory
                        # unlock takes effect before its transaction commits, so the events
                        # and the unlock in one statement could let the next holder read the
                        # log without them.
                        async with conn.pipeline():
                            await cursor.execute("BEGIN")
                            await cursor.execute(*logged)
                            await cursor.execute("COMMIT")
                            await self._release(cursor, key, lock_name, settled)
                    else:
                        await self._release(cursor, key, lock_name, settled)
                    row = await cursor.fetchone()
                unlocked = bool(row and row[0])
            except Exception as error:
                # A row left behind is removed by the sweep after the TTL: harmless. A session
                # the database ended (a restart, an outage, a fenced worker) took its lock with
                # it: nothing was left locked, so nothing to warn about.
                if not is_transient_database_error(error):
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

    async def _release(self, cursor: Any, key: str, lock_name: str, settled: str | None) -> None:
        """Send the statement that unlocks `key`, with what its holder settled."""
        if settled is not None:
            await cursor.execute(_SETTLE_AND_UNLOCK[settled], {"lock": lock_name, "key": key})
        elif key in self._unsettled:
            self._unsettled.discard(key)
            await cursor.execute(_FORGET_UNUSED_RUN_AND_UNLOCK, {"lock": lock_name, "key": key})
        else:
            await cursor.execute(UNLOCK, (lock_name,))

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

    async def finish(self, key: str, checkpointer: Any) -> bool:
        if key not in self._held or saver_pool(checkpointer) is not self._pool:
            return False
        self._unsettled.discard(key)
        self._settled[key] = "finished"
        return True

    async def log_with_release(
        self, key: str, log: Any, run_id: str, events: Sequence[Mapping[str, Any]]
    ) -> bool:
        if not events or key not in self._held:
            return False
        if not isinstance(log, PostgresResponseEventLog) or log.pool is not self._pool:
            return False
        self._logged[key] = append_statement(run_id, events)
        return True

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
