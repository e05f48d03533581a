"""The event log of streamed background Responses, in table `lgos_response_events`."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

from psycopg import AsyncConnection
from psycopg.rows import tuple_row
from psycopg.types.json import Jsonb

from lgos.integrations.postgres.pool import Pool

logger = logging.getLogger("lgos.postgres")

# How often a reader of a PostgreSQL event log re-reads it while its process cannot listen
# for notifications (its LISTEN session is being re-established).
_EVENT_POLL_SECONDS = 0.1
_EVENTS_CHANNEL = "lgos_response_events"
_LISTEN_RETRY_SECONDS = 0.5
_LISTEN_RETRY_MAX_SECONDS = 5.0
# What every write of events ends with: a notification of the events it stored (those in its
# `added`, which another write had not stored first), sent when they are committed. Its payload
# is the run id, a space and the JSON array of those events, so a tail that has every event
# before them streams them without reading the log; the run id alone when that would pass
# PostgreSQL's limit of 8000 bytes a payload. Nothing is sent when `added` is empty (the array,
# and so the payload, is NULL then).
_NOTIFY_ADDED = f"""
SELECT pg_notify('{_EVENTS_CHANNEL}',
                 CASE WHEN octet_length(payload) < 8000 THEN payload ELSE %(run_id)s::text END)
FROM (
    SELECT %(run_id)s::text || ' ' || jsonb_agg(event ORDER BY sequence_number)::text AS payload
    FROM added
) AS announced
WHERE payload IS NOT NULL"""

# One statement inserts the events and notifies their readers. `{before}`: another write's
# common table expressions, which the statement makes too (`append_statement`). The events go
# as a binary `jsonb[]` (`%(events)b`): as text, psycopg quotes each event's JSON into the
# array's literal, a backslash before every quote, and PostgreSQL takes them out again (the
# same values either way; measured: 0.6 ms less client CPU for a streamed run's 16 events).
_APPEND_EVENTS = (
    """
WITH {before}added AS (
    INSERT INTO lgos_response_events (run_id, sequence_number, event)
    SELECT %(run_id)s, number, event
    FROM unnest(%(numbers)s::integer[], %(events)b::jsonb[]) AS batch(number, event)
    ON CONFLICT DO NOTHING
    RETURNING sequence_number, event
)"""
    + _NOTIFY_ADDED
)

_APPEND = _APPEND_EVENTS.format(before="")

# A worker's first step on a run it holds: the events after a sequence number, and when there
# are none the run's first events, stored and announced, in one round trip. Every part reads
# the same snapshot, so the insert sees only the events that were there before it; `notified`
# is read by the outer query, so it runs (its row, a NULL, is left out by the caller). The
# events go in binary, as in `_APPEND_EVENTS`.
_READ_OR_START = f"""
WITH existing AS (
    SELECT sequence_number, event FROM lgos_response_events
    WHERE run_id = %(run_id)s AND sequence_number > %(after)s
),
added AS (
    INSERT INTO lgos_response_events (run_id, sequence_number, event)
    SELECT %(run_id)s, number, event
    FROM unnest(%(numbers)s::integer[], %(events)b::jsonb[]) AS batch(number, event)
    WHERE NOT EXISTS (SELECT FROM existing)
    ON CONFLICT DO NOTHING
    RETURNING sequence_number, event
),
notified AS ({_NOTIFY_ADDED}
)
SELECT sequence_number, event FROM existing
UNION ALL
SELECT NULL, NULL FROM notified
ORDER BY 1
"""


def append_statement(
    run_id: str, events: Sequence[Mapping[str, Any]], before: str = ""
) -> tuple[str, dict[str, Any]]:
    """The statement that appends `events` to the log and notifies their readers, with its
    parameters (`PostgresResponseEventLog.append` sends it; a run lease's release may send it
    in its own round trip, `PostgresRunCoordinator.log_with_release`). `before`: common table
    expressions of another write made in the same statement, each followed by a comma (their
    parameters are the caller's to add; PostgreSQL runs a data-modifying one to completion
    whether or not the rest reads it)."""
    statement = _APPEND_EVENTS.format(before=before) if before else _APPEND
    return statement, {
        "run_id": run_id,
        "numbers": [int(event["sequence_number"]) for event in events],
        "events": [Jsonb(event) for event in events],
    }


class PostgresResponseEventLog:
    """The log in table `lgos_response_events` (created by LGOS's migrations) on the server's
    pool.

    Every append notifies channel `lgos_response_events` with the run id and, when they fit,
    the events it stored, in the statement that inserts them (so the notification goes out
    when they are committed). A process that tails streams listens on one connection of its
    own, opened at its first wait, and wakes the tails of the run it hears about: a tail that
    has every event before the ones announced streams them as they came (no query), else it
    reads the log; an idle tail costs no queries. While that connection is down (a database
    restart) the tails poll every `poll_interval` until it is back.
    """

    def __init__(self, pool: Pool, poll_interval: float = _EVENT_POLL_SECONDS) -> None:
        self.pool = pool
        self.poll_interval = poll_interval
        self._listener: _EventListener | None = None

    async def append(self, run_id: str, events: Sequence[Mapping[str, Any]]) -> None:
        if not events:
            return
        async with self.pool.connection() as conn:
            await conn.execute(*append_statement(run_id, events))

    async def read(self, run_id: str, after: int = -1) -> list[Mapping[str, Any]]:
        async with self.pool.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(
                "SELECT event FROM lgos_response_events "
                "WHERE run_id = %s AND sequence_number > %s ORDER BY sequence_number",
                (run_id, after),
            )
            return [row[0] for row in await cur.fetchall()]

    async def read_or_start(
        self, run_id: str, after: int, first: Sequence[Mapping[str, Any]]
    ) -> list[Mapping[str, Any]]:
        async with self.pool.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(
                _READ_OR_START,
                {
                    "run_id": run_id,
                    "after": after,
                    "numbers": [int(event["sequence_number"]) for event in first],
                    "events": [Jsonb(event) for event in first],
                },
            )
            return [row[1] for row in await cur.fetchall() if row[0] is not None]

    async def last(self, run_id: str) -> Mapping[str, Any] | None:
        async with self.pool.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(
                "SELECT event FROM lgos_response_events WHERE run_id = %s "
                "ORDER BY sequence_number DESC LIMIT 1",
                (run_id,),
            )
            row = await cur.fetchone()
        return None if row is None else dict(row[0])

    async def wait(self, run_id: str, after: int, patience: float) -> None:
        listener = self._started_listener()
        with listener.waiting(run_id) as heard:
            await self._wait_checked(run_id, after, patience, heard.woken)

    @contextmanager
    def follow(self, run_id: str) -> Iterator[_Follower]:
        listener = self._started_listener()
        with listener.waiting(run_id) as heard:
            yield _Follower(self, listener, run_id, heard)

    def _started_listener(self) -> _EventListener:
        if self._listener is None:
            # The pool's own connection string (a pool opened with a callable one gives None:
            # its listener then never connects, and tails poll).
            conninfo = self.pool.conninfo
            self._listener = _EventListener(conninfo if isinstance(conninfo, str) else None)
        self._listener.start()
        return self._listener

    async def _wait_checked(
        self, run_id: str, after: int, patience: float, woken: asyncio.Event
    ) -> None:
        """Wait on `woken`, put in place before this call, after checking the log: an event
        written between the caller's last read and then sent its notification before anyone
        listened for it. While the listener is away, the log is read every `poll_interval`."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + patience
        listener = self._listener
        assert listener is not None
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


class _Heard:
    """What one reader's place on the process's listener heard since its last wait returned:
    `woken` is set by every notification of the run and every change of the listener's state;
    `events` holds the events the notifications carried, while every one of them carried its
    events (`complete`)."""

    def __init__(self) -> None:
        self.woken = asyncio.Event()
        self.events: dict[int, Mapping[str, Any]] = {}
        self.complete = True

    def hear(self, events: list[Mapping[str, Any]] | None) -> None:
        """A notification of the run, with the events it stored (None: it did not say)."""
        if events is None:
            self.complete = False
        elif self.complete:
            for event in events:
                self.events.setdefault(int(event["sequence_number"]), event)
        self.woken.set()

    def missed(self) -> None:
        """The listener stopped or started listening: appends may have gone unheard."""
        self.complete = False
        self.woken.set()

    def after(self, last: int) -> list[Mapping[str, Any]] | None:
        """The heard events after sequence number `last`, in order, when they are all there
        is after it: every notification carried its events and they follow `last` without a
        gap (another writer's notification of a number between may not have arrived yet).
        None when only a read of the log can tell."""
        if not self.complete:
            return None
        numbers = sorted(number for number in self.events if number > last)
        if numbers and numbers[-1] - last != len(numbers):
            return None
        return [self.events[number] for number in numbers]

    def clear(self) -> None:
        self.woken.clear()
        self.events.clear()
        self.complete = True


class _Follower:
    """One reader's place on the process's listener, in place from before its first read and
    cleared only as a wait returns, before the reader's next read. So while the listener
    listens and nothing was heard, the listener has listened since before that read, and any
    event appended after it is announced: the wait needs no read of its own. And when every
    announcement heard carried its events, they are what a read would find after the reader's
    last event, and the wait returns them."""

    def __init__(
        self,
        log: PostgresResponseEventLog,
        listener: _EventListener,
        run_id: str,
        heard: _Heard,
    ) -> None:
        self.log = log
        self.listener = listener
        self.run_id = run_id
        self.heard = heard

    async def wait(self, after: int, patience: float) -> list[Mapping[str, Any]] | None:
        heard = self.heard
        try:
            if heard.woken.is_set():
                return heard.after(after)  # heard of since the last read
            if self.listener.listening:
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(heard.woken.wait(), patience)
                return heard.after(after) if heard.woken.is_set() else None
            # Not listening (yet, or any more): the read that covers the gap.
            await self.log._wait_checked(self.run_id, after, patience, heard.woken)
            return None
        finally:
            heard.clear()


class _EventListener:
    """One LISTEN session per process, shared by every tail: wakes the waiters of the run a
    notification names. It reconnects by itself; while it is away `listening` is False, and
    every waiter is woken whenever that changes, so none sleeps through the gap."""

    def __init__(self, conninfo: str | None) -> None:
        self.conninfo = conninfo
        self.listening = False
        self._waiters: dict[str, set[_Heard]] = {}
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
    def waiting(self, run_id: str) -> Iterator[_Heard]:
        heard = _Heard()
        waiters = self._waiters.setdefault(run_id, set())
        waiters.add(heard)
        try:
            yield heard
        finally:
            waiters.discard(heard)
            if not waiters:
                self._waiters.pop(run_id, None)

    def _wake(self, payload: str) -> None:
        """Wake the waiters of the run a notification names (`_NOTIFY_ADDED`'s payload)."""
        run_id, _, announced = payload.partition(" ")
        waiters = self._waiters.get(run_id)
        if not waiters:
            return  # nobody here follows the run: its events are not even parsed
        events = _announced_events(announced)
        for heard in waiters:
            heard.hear(events)

    def _wake_all(self) -> None:
        for waiters in self._waiters.values():
            for heard in waiters:
                heard.missed()

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


def _announced_events(announced: str) -> list[Mapping[str, Any]] | None:
    """The events a notification's payload carries after its run id (psycopg's own JSON
    loader reads a `jsonb` column the same way), or None when it carries none."""
    if not announced:
        return None
    try:
        events = json.loads(announced)
    except ValueError:
        return None
    return events if isinstance(events, list) else None
