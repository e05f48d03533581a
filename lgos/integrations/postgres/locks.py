"""Session advisory locks, taken without ever blocking a statement on them.

Advisory locks live in one namespace per database, shared with every other application in
it. Keys are hashed from a prefixed name so LGOS's keys do not collide with theirs.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any

from psycopg import AsyncConnection
from psycopg.rows import tuple_row

TRY_LOCK = "SELECT pg_try_advisory_lock(hashtextextended(%s, 0))"
UNLOCK = "SELECT pg_advisory_unlock(hashtextextended(%s, 0))"
_LOCK_POLL_SECONDS = 0.2


async def try_advisory_lock(conn: AsyncConnection[Any], name: str) -> bool:
    """Take the session advisory lock `name` if it is free; never wait."""
    async with conn.cursor(row_factory=tuple_row) as cursor:
        await cursor.execute(TRY_LOCK, (name,))
        row = await cursor.fetchone()
    return bool(row and row[0])


async def advisory_unlock(conn: AsyncConnection[Any], name: str) -> bool:
    """Release the session advisory lock `name`; False when this session did not hold it."""
    async with conn.cursor(row_factory=tuple_row) as cursor:
        await cursor.execute(UNLOCK, (name,))
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
