"""The event log of streamed background Responses: what a client replays and tails.

A background Response created with `stream: true` keeps every SSE event it emitted, in sequence
order, so the creating client and any later `GET /v1/responses/{id}?stream=true` read the same
events from any API instance. The API appends `response.created` and `response.queued`
(sequence numbers 0 and 1) when it submits a new run; the worker appends the rest, from
`response.in_progress` to the terminal event.

Logs are keyed by the engine run id (the part of the Response id the engine knows).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Iterable, Sequence
from typing import Any, Protocol, runtime_checkable

# The first sequence number a worker writes: 0 and 1 are the API's created and queued events.
FIRST_WORKER_SEQUENCE = 2
TERMINAL_EVENTS: frozenset[str] = frozenset(
    {"response.completed", "response.failed", "response.incomplete"}
)
# How often a PostgreSQL log is re-read while a reader waits for new events.
POLL_INTERVAL_SECONDS = 0.1


@runtime_checkable
class ResponseEventLog(Protocol):
    async def append(self, run_id: str, events: Sequence[dict[str, Any]]) -> None:
        """Store events (each with its `sequence_number`); a number already stored is kept."""
        ...

    async def read(self, run_id: str, after: int = -1) -> list[dict[str, Any]]:
        """The events with `sequence_number > after`, in order."""
        ...

    async def wait(self, run_id: str, after: int, patience: float) -> None:
        """Return when an event after `after` may be there, or after `patience` seconds."""
        ...

    async def delete(self, run_ids: Iterable[str]) -> None:
        """Forget the events of these runs (retention)."""
        ...


def frame_event(frame: bytes) -> dict[str, Any]:
    """The JSON payload of one `event: ...\\ndata: ...` SSE frame of ResponsesStream."""
    _, _, data = frame.partition(b"\ndata: ")
    event: dict[str, Any] = json.loads(data)
    return event


class InMemoryResponseEventLog:
    """The log of `InMemoryBackgroundBackend`: lives and dies with the process."""

    def __init__(self) -> None:
        self._events: dict[str, dict[int, dict[str, Any]]] = {}
        self._changed: dict[str, asyncio.Event] = {}

    async def append(self, run_id: str, events: Sequence[dict[str, Any]]) -> None:
        stored = self._events.setdefault(run_id, {})
        for event in events:
            stored.setdefault(int(event["sequence_number"]), event)
        changed = self._changed.pop(run_id, None)
        if changed is not None:
            changed.set()

    async def read(self, run_id: str, after: int = -1) -> list[dict[str, Any]]:
        stored = self._events.get(run_id, {})
        return [stored[number] for number in sorted(stored) if number > after]

    async def wait(self, run_id: str, after: int, patience: float) -> None:
        if any(number > after for number in self._events.get(run_id, {})):
            return
        changed = self._changed.setdefault(run_id, asyncio.Event())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(changed.wait(), patience)

    async def delete(self, run_ids: Iterable[str]) -> None:
        for run_id in run_ids:
            self._events.pop(run_id, None)


class PostgresResponseEventLog:
    """The log in table `lgos_response_events` (created by LGOS's migrations) on the server's
    pool. Readers poll: a tail costs one small indexed query per interval, and needs no
    connection held open per stream."""

    def __init__(self, pool: Any, poll_interval: float = POLL_INTERVAL_SECONDS) -> None:
        # psycopg comes with lgos[postgres]; the in-memory log must import without it.
        from psycopg.rows import tuple_row
        from psycopg.types.json import Jsonb

        self._tuple_row = tuple_row
        self._jsonb = Jsonb
        self.pool = pool
        self.poll_interval = poll_interval

    async def append(self, run_id: str, events: Sequence[dict[str, Any]]) -> None:
        if not events:
            return
        async with self.pool.connection() as conn, conn.cursor() as cur:
            await cur.executemany(
                "INSERT INTO lgos_response_events (run_id, sequence_number, event) "
                "VALUES (%s, %s, %s) ON CONFLICT DO NOTHING",
                [(run_id, int(event["sequence_number"]), self._jsonb(event)) for event in events],
            )

    async def read(self, run_id: str, after: int = -1) -> list[dict[str, Any]]:
        async with self.pool.connection() as conn, conn.cursor(row_factory=self._tuple_row) as cur:
            await cur.execute(
                "SELECT event FROM lgos_response_events "
                "WHERE run_id = %s AND sequence_number > %s ORDER BY sequence_number",
                (run_id, after),
            )
            return [row[0] for row in await cur.fetchall()]

    async def wait(self, run_id: str, after: int, patience: float) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + patience
        while loop.time() < deadline:
            await asyncio.sleep(self.poll_interval)
            async with (
                self.pool.connection() as conn,
                conn.cursor(row_factory=self._tuple_row) as cur,
            ):
                await cur.execute(
                    "SELECT 1 FROM lgos_response_events "
                    "WHERE run_id = %s AND sequence_number > %s LIMIT 1",
                    (run_id, after),
                )
                if await cur.fetchone() is not None:
                    return

    async def delete(self, run_ids: Iterable[str]) -> None:
        ids = list(run_ids)
        if not ids:
            return
        async with self.pool.connection() as conn, conn.cursor() as cur:
            await cur.execute("DELETE FROM lgos_response_events WHERE run_id = ANY(%s)", (ids,))
