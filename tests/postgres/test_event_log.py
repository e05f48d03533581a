"""The PostgreSQL event log's worker start: the read and the first events in one round trip.
Real PostgreSQL."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import anyio
import psycopg
import pytest

from lgos.integrations.postgres import PostgresResponseEventLog
from lgos.integrations.postgres.migrations import _apply_own_migrations
from lgos.integrations.postgres.pool import Pool, new_pool

pytestmark = [pytest.mark.anyio, pytest.mark.postgres, pytest.mark.timeout(120)]

DEADLINE_SECONDS = 30


@pytest.fixture
async def pool(database: str) -> AsyncIterator[Pool]:
    async with new_pool(database, 2) as opened:
        await _apply_own_migrations(opened)
        yield opened


def event(number: int, kind: str = "response.output_text.delta") -> dict[str, object]:
    return {"type": kind, "sequence_number": number}


async def test_a_run_without_events_after_the_mark_is_started_and_announced(
    pool: Pool, database: str
) -> None:
    log = PostgresResponseEventLog(pool)
    await log.append("run-a", [event(0), event(1)])  # the API's, before the worker's mark
    async with await psycopg.AsyncConnection.connect(database, autocommit=True) as listener:
        await listener.execute("LISTEN lgos_response_events")
        first = event(2, "response.in_progress")
        assert await log.read_or_start("run-a", 1, [first]) == []
        assert await log.read("run-a") == [event(0), event(1), first]
        with anyio.fail_after(DEADLINE_SECONDS):
            notice = await anext(listener.notifies())
        # The run, and the event it stored (a tail streams it without reading the log).
        assert notice.payload == 'run-a [{"type": "response.in_progress", "sequence_number": 2}]'


async def test_a_started_run_reads_its_events_and_stores_nothing(pool: Pool) -> None:
    log = PostgresResponseEventLog(pool)
    earlier = [event(2, "response.in_progress"), event(3), event(4)]
    await log.append("run-b", [event(0), *earlier])
    found = await log.read_or_start("run-b", 1, [event(2, "response.in_progress_again")])
    assert found == earlier
    assert await log.read("run-b") == [event(0), *earlier]
    # Concurrent starts of different runs keep to their own run.
    starts = await asyncio.gather(*(log.read_or_start(f"run-{i}", 1, [event(2)]) for i in range(4)))
    assert starts == [[]] * 4


async def test_events_are_stored_as_they_were_appended_whatever_their_text(
    pool: Pool, database: str
) -> None:
    # The events go to PostgreSQL as a binary `jsonb[]`: text that an array literal would have to
    # quote (quotes, backslashes, braces, commas, NULL, non-ASCII) comes back unchanged, through
    # both statements that write events, and PostgreSQL reads each as the same JSON.
    awkward = 'a "quoted" {brace}, back\\slash, NULL, é, 漢字, \\u0000-free\n\ttabs'
    log = PostgresResponseEventLog(pool)
    first = {**event(0, "response.created"), "text": awkward, "nested": [{"k": awkward}, None]}
    assert await log.read_or_start("run-c", -1, [first]) == []
    later = [
        {**event(1), "delta": awkward, "numbers": [1, -2.5, 10**15], "flag": True},
        {**event(2), "empty": {}, "list": [], "null": None},
    ]
    await log.append("run-c", later)
    assert await log.read("run-c") == [first, *later]
    async with await psycopg.AsyncConnection.connect(database, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT event->>'text', event->'nested'->0->>'k', event->>'delta' "
            "FROM lgos_response_events WHERE run_id = 'run-c' ORDER BY sequence_number"
        )
        assert await cur.fetchall() == [
            (awkward, awkward, None),
            (None, None, awkward),
            (None,) * 3,
        ]
