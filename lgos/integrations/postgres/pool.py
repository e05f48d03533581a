"""The connection pool every PostgreSQL-backed part of a process shares, the check that keeps
a database restart from failing the requests and runs that draw its dead connections, and the
rule that tells a busy pool from an unreachable database."""

from __future__ import annotations

import asyncio
import select
import time
from collections.abc import Callable
from typing import Any

from psycopg import AsyncConnection, pq
from psycopg.rows import DictRow, dict_row
from psycopg_pool import AsyncConnectionPool, PoolTimeout

Pool = AsyncConnectionPool[AsyncConnection[DictRow]]


# psycopg_pool's own default: how long it retries a lost connection before giving it up.
PSYCOPG_RECONNECT_SECONDS = 300.0
# How long a request waits for a connection by default before it asks whether the database
# answers (and answers 503 when it does not).
DEFAULT_WAIT_SECONDS = 5.0
# How long one answer to "does the database accept a connection?" serves every waiter.
REACHABLE_FRESH_SECONDS = 1.0
CONNECT_TIMEOUT_SECONDS = 2


def new_pool(
    uri: str,
    size: int,
    *,
    wait_seconds: float = DEFAULT_WAIT_SECONDS,
    reconnect_seconds: float = PSYCOPG_RECONNECT_SECONDS,
    on_reconnect_failed: Callable[[], None] | None = None,
) -> Pool:
    """A pool of `size` connections (not yet open) as LangGraph's saver and store expect them.

    A checkout that waited `wait_seconds` asks whether the database accepts a connection: if it
    does, the pool is only busy and the checkout waits again; if not, `PoolTimeout` (the
    request answers 503). A lost connection is retried for `reconnect_seconds`, then given up
    and `on_reconnect_failed` called. `open_postgres` gives up after a second and lets its
    outage watch refill the pool once the database is back (`outage`), instead of the pool's
    growing back-off waiting it out.
    """
    idle_check = _IdleCheck()
    pool: Pool = _PatientPool(
        _Reachable(uri),
        uri,
        min_size=size,
        max_size=size,
        timeout=wait_seconds,
        kwargs=_connection_kwargs(),
        # Each checkout is checked first (a round trip only when the server said something to
        # the idle session), so connections a database restart killed are replaced instead of
        # failing the request or run that drew them.
        check=lambda conn: idle_check(pool, conn),
        open=False,
        name="lgos",
        reconnect_timeout=reconnect_seconds,
        reconnect_failed=None if on_reconnect_failed is None else _ignore_pool(on_reconnect_failed),
    )
    return pool


class _PatientPool(AsyncConnectionPool[AsyncConnection[DictRow]]):
    """Waits for a connection for as long as the database answers: a pool whose connections
    are all in use is busy, not down. Only a wait that ends with the database out of reach is
    a `PoolTimeout`."""

    def __init__(self, reachable: _Reachable, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._reachable = reachable

    # psycopg_pool's own signature (its `connection()` calls it), hence the `timeout` argument.
    async def getconn(self, timeout: float | None = None) -> AsyncConnection[DictRow]:  # noqa: ASYNC109
        while True:
            try:
                return await super().getconn(timeout)
            except PoolTimeout:
                if not await self._reachable():
                    raise


class _Reachable:
    """Whether the database accepts a connection now: one attempt at a time, its answer shared
    by every waiter for `REACHABLE_FRESH_SECONDS` (a hundred waiting requests cost one
    connection attempt, not a hundred)."""

    def __init__(self, uri: str) -> None:
        self.uri = uri
        self._lock = asyncio.Lock()
        self._answer = False
        self._asked_at = -REACHABLE_FRESH_SECONDS

    async def __call__(self) -> bool:
        async with self._lock:
            if time.monotonic() - self._asked_at >= REACHABLE_FRESH_SECONDS:
                self._answer = await accepts_connections(self.uri)
                self._asked_at = time.monotonic()
            return self._answer


async def accepts_connections(uri: str) -> bool:
    """Whether one new connection to `uri` succeeds now (closed at once)."""
    try:
        conn = await AsyncConnection.connect(
            uri, connect_timeout=CONNECT_TIMEOUT_SECONDS, autocommit=True
        )
    except Exception:
        # Refused, starting up, out of connection slots, or even refusing us (a password
        # changed meanwhile): not reachable for this process, whatever the cause.
        return False
    await conn.close()
    return True


def _ignore_pool(callback: Callable[[], None]) -> Callable[[Pool], None]:
    return lambda _pool: callback()


def _connection_kwargs() -> dict[str, Any]:  # psycopg_pool's `kwargs` parameter
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


class _IdleCheck:
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

    def __init__(self) -> None:
        # The sweeps under way (the event loop keeps only weak references to tasks).
        self._sweeps: set[asyncio.Task[None]] = set()

    async def __call__(self, pool: Pool, conn: AsyncConnection[DictRow]) -> None:
        if conn.pgconn.status == pq.ConnStatus.OK and not _readable(conn.pgconn.socket):
            return
        try:
            await AsyncConnectionPool.check_connection(conn)
        except Exception:
            sweep = asyncio.create_task(pool.check())
            self._sweeps.add(sweep)
            sweep.add_done_callback(self._sweeps.discard)
            raise


def _readable(fd: int) -> bool:
    poller = select.poll()
    poller.register(fd, select.POLLIN | select.POLLERR | select.POLLHUP)
    return bool(poller.poll(0))
