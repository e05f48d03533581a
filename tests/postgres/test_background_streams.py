"""The tail of a streamed background Response on PostgreSQL reads the log only for what its
notifications do not carry: its opening events come from the create itself, the events an
append announces come with the announcement, and a wait while the process listens for the
log's notifications reads nothing. Real PostgreSQL; the engine is the Hatchet tests' fake (a
stream that ends at once never asks it)."""

from __future__ import annotations

import asyncio
import collections
import json
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

from lgos.core.background import FIRST_WORKER_SEQUENCE
from lgos.core.stored import StoredResponse
from lgos.integrations.hatchet import HatchetBackgroundBackend
from lgos.integrations.postgres import PostgresResponseEventLog
from lgos.integrations.postgres.events import _EVENTS_CHANNEL, _Heard
from lgos.integrations.postgres.migrations import _apply_own_migrations
from lgos.integrations.postgres.pool import new_pool
from lgos.integrations.postgres.stored import PostgresResponseStore
from lgos.service import background as background_service
from lgos.service.background import BackgroundResponses
from lgos.service.stateful import StatefulResponses
from lgos.wire import ids, responses_decoder
from tests.background.job_worker import registry
from tests.background.test_hatchet import FakeHatchet
from tests.support.postgres import counted_statements

pytestmark = [pytest.mark.anyio, pytest.mark.postgres, pytest.mark.timeout(60)]

READ_EVENTS = "SELECT event FROM"
LOOK_FOR_EVENTS = "SELECT 1 FROM"


@pytest.fixture
async def log(database: str) -> AsyncIterator[PostgresResponseEventLog]:
    async with new_pool(database, 2) as pool:
        await _apply_own_migrations(pool)
        opened = PostgresResponseEventLog(pool)
        try:
            yield opened
        finally:
            await opened.close()


async def listening(log: PostgresResponseEventLog) -> None:
    """Return once the process listens for the log's notifications: a wait on a run without
    events returns when the listener's state changes (it wakes every waiter then)."""
    await log.wait(ids.new_hex(), -1, patience=30)
    assert log._listener is not None
    assert log._listener.listening


async def heard_so_far(log: PostgresResponseEventLog) -> None:
    """Return once the process's listener has heard every notification committed so far.
    PostgreSQL delivers a channel's notifications in the order their transactions committed,
    so once the listener hears one sent now, it has heard every earlier one: a create's own,
    which could otherwise reach a loaded machine's listener after the tail began to wait, and
    wake it for a read that finds nothing new."""
    assert log._listener is not None
    fence = ids.new_hex()
    with log._listener.waiting(fence) as heard:
        async with log.pool.connection() as conn:
            await conn.execute("SELECT pg_notify(%s, %s)", (_EVENTS_CHANNEL, fence))
        await asyncio.wait_for(heard.woken.wait(), 30)


async def opened_stream(
    log: PostgresResponseEventLog,
) -> tuple[AsyncIterator[Any], str, dict[str, Any]]:
    """A streamed run created on the fake engine: its stream, engine run id and Response (its
    create's notification heard before the tail starts)."""
    engine = FakeHatchet()
    backend = HatchetBackgroundBackend(engine, engine, events=log)
    background = BackgroundResponses(registry(), backend)
    body = {"model": "background-mock", "input": "x", "background": True, "stream": True}
    stream = await background.create_stream(
        responses_decoder.decode(body), owner_scope="alice", idempotency_key=None
    )
    await heard_so_far(log)
    created = await anext(stream)
    assert created["type"] == "response.created"
    parsed = ids.parse_run_response_id(str(created["response"]["id"]))
    assert parsed is not None
    return stream, parsed.nonce, dict(created["response"])


async def test_a_new_streams_opening_events_are_not_read_back(
    log: PostgresResponseEventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    engine = FakeHatchet()
    background = BackgroundResponses(
        registry(), HatchetBackgroundBackend(engine, engine, events=log)
    )
    body = {"model": "background-mock", "input": "x", "background": True, "stream": True}
    stream = await background.create_stream(
        responses_decoder.decode(body), owner_scope="alice", idempotency_key=None
    )
    with counted_statements(monkeypatch) as statements:
        opening = [await anext(stream), await anext(stream)]
    assert [event["type"] for event in opening] == ["response.created", "response.queued"]
    assert not statements, "the create's own events were read back from the log"
    # What a reader that starts now replays is what this stream sent.
    parsed = ids.parse_run_response_id(str(opening[0]["response"]["id"]))
    assert parsed is not None
    assert await log.read(parsed.nonce) == opening
    await stream.aclose()


@contextmanager
def appended_while_waiting(
    monkeypatch: pytest.MonkeyPatch,
    log: PostgresResponseEventLog,
    run_id: str,
    batches: list[list[dict[str, Any]]],
) -> Iterator[None]:
    """A worker that appends its next batch each time a reader of the log settles down to
    wait for a notification (as a worker's appends come while the tail waits)."""
    original = asyncio.wait_for

    async def wait_for(awaited: Any, *args: Any, **kwargs: Any) -> Any:
        if batches and getattr(awaited, "__qualname__", "") == "Event.wait":
            await log.append(run_id, batches.pop(0))
        return await original(awaited, *args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(asyncio, "wait_for", wait_for)
        yield


async def tailed_while_appending(
    log: PostgresResponseEventLog,
    monkeypatch: pytest.MonkeyPatch,
    batches: list[list[dict[str, Any]]],
) -> tuple[list[Any], collections.Counter[str]]:
    """A streamed run's tail, after its opening events, while a worker appends `batches`
    one at a time as the tail waits: what it streamed, and the statements sent meanwhile."""
    # The tail asks the engine (and reads the log after it) once its status check is due,
    # seconds after it starts: on a loaded machine this test can take that long, so the check
    # is put out of its reach, and every read counted here is one the appends caused.
    monkeypatch.setattr(background_service, "LOGGED_RUN_CHECK_SECONDS", 600.0)
    await listening(log)
    stream, run_id, _ = await opened_stream(log)
    assert (await anext(stream))["type"] == "response.queued"
    with (
        counted_statements(monkeypatch) as statements,
        appended_while_waiting(monkeypatch, log, run_id, list(batches)),
    ):
        seen = [event async for event in stream]
    return seen, statements


def a_run(response: dict[str, Any], delta: str = "a") -> list[list[dict[str, Any]]]:
    """A worker's appends for a short streamed run, three batches."""
    return [
        [{"type": "response.in_progress", "sequence_number": FIRST_WORKER_SEQUENCE}],
        [{"type": "response.output_text.delta", "sequence_number": 3, "delta": delta}],
        [
            {"type": "response.output_text.delta", "sequence_number": 4, "delta": "b"},
            {"type": "response.completed", "sequence_number": 5, "response": response},
        ],
    ]


async def test_a_streams_tail_streams_what_the_appends_announce_without_reading_the_log(
    log: PostgresResponseEventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    response = {"id": "resp_x", "object": "response", "status": "completed", "output": []}
    appended = a_run(response, delta='a "quoted" \\ line\nbreak, ünïcode')
    seen, statements = await tailed_while_appending(log, monkeypatch, appended)
    # Every event as it was appended, in order (each batch came with its notification).
    assert seen == [event for batch in appended for event in batch]
    # No read at all (was one per append: the notification only named the run), and nothing
    # else from the tail: the statements are the appends.
    assert statements[READ_EVENTS] == 0, statements
    assert statements[LOOK_FOR_EVENTS] == 0, statements
    assert sum(statements.values()) == len(appended), statements


async def test_events_too_big_for_a_notification_are_read_from_the_log(
    log: PostgresResponseEventLog, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL refuses a notification's payload of 8000 bytes or more: an append whose
    events do not fit announces the run alone, and the tail reads that append's events."""
    response = {"id": "resp_x", "object": "response", "status": "completed", "output": []}
    appended = a_run(response, delta="x" * 9000)
    seen, statements = await tailed_while_appending(log, monkeypatch, appended)
    assert seen == [event for batch in appended for event in batch]
    assert statements[READ_EVENTS] == 1, statements  # the big delta's batch alone
    assert sum(statements.values()) == len(appended) + 1, statements


def test_heard_events_are_given_only_when_nothing_before_them_can_be_missing() -> None:
    def event(number: int) -> dict[str, Any]:
        return {"type": "response.output_text.delta", "sequence_number": number}

    heard = _Heard()
    heard.hear([event(3), event(4)])
    heard.hear([event(5)])
    assert heard.after(2) == [event(3), event(4), event(5)]
    assert heard.after(3) == [event(4), event(5)]  # what the reader has is left out
    assert heard.after(5) == []  # nothing new, and nothing unheard
    assert heard.after(1) is None  # 2 was not heard of: only the log knows it
    heard.clear()
    heard.hear([event(7)])
    assert heard.after(5) is None  # a gap: 6's notification may still be on its way
    heard.clear()
    heard.hear([event(6)])
    heard.hear(None)  # an append too big to carry its events
    assert heard.after(5) is None
    heard.clear()
    heard.hear([event(6)])
    heard.missed()  # the listener's session went: appends may have gone unheard
    assert heard.after(5) is None
    heard.clear()
    assert heard.after(5) == []
    assert not heard.woken.is_set()


async def test_a_follower_is_woken_when_the_listener_is_lost_and_then_reads_the_log(
    log: PostgresResponseEventLog, database: str
) -> None:
    """While the process does not listen, an append announces itself to nobody: a waiting
    reader is woken when the listener's session goes, and its next waits read the log."""
    await listening(log)
    run_id = ids.new_hex()
    with log.follow(run_id) as waiter:
        waiting = asyncio.create_task(waiter.wait(-1, patience=60))
        async with await psycopg.AsyncConnection.connect(database, autocommit=True) as admin:
            await admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = current_database() AND query LIKE 'LISTEN%%'"
            )
        await asyncio.wait_for(waiting, 20)  # woken, not left for its minute
        started = {"type": "response.in_progress", "sequence_number": FIRST_WORKER_SEQUENCE}
        await log.append(run_id, [started])
        # Listening again or not yet, the wait returns well before its patience.
        await asyncio.wait_for(waiter.wait(-1, patience=60), 20)
    assert await log.read(run_id) == [started]


async def test_a_streamed_create_logs_its_opening_events_with_its_record_in_one_statement(
    log: PostgresResponseEventLog, database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = PostgresResponseStore(log.pool, log)  # as the server builds it: the engine's log
    engine = FakeHatchet()
    backend = HatchetBackgroundBackend(engine, engine, events=log)
    stateful = StatefulResponses(store, registry(), backend)
    background = BackgroundResponses(registry(), backend, stateful)
    body = {"model": "background-mock", "input": "x", "background": True, "stream": True}
    async with await psycopg.AsyncConnection.connect(database, autocommit=True) as listener:
        await listener.execute("LISTEN lgos_response_events")
        with counted_statements(monkeypatch, words=2) as statements:
            stream = await background.create_stream(
                responses_decoder.decode(body), owner_scope="alice", idempotency_key=None
            )
        assert statements == {"WITH record": 1}, statements  # was the insert, then the append
        opening = [await anext(stream), await anext(stream)]
        await stream.aclose()
        parsed = ids.parse_run_response_id(str(opening[0]["response"]["id"]))
        assert parsed is not None
        # Announced, as every append is: a tail elsewhere wakes.
        notice = await asyncio.wait_for(anext(listener.notifies()), 20)
        run_id, _, announced = notice.payload.partition(" ")
        assert run_id == parsed.nonce
        assert json.loads(announced) == opening  # with the events it stored
    # Both were written: the owner's record, and the events a late reader replays.
    record = await store.get_response(str(opening[0]["response"]["id"]), "alice")
    assert record is not None
    assert record.events_key == parsed.nonce
    assert await log.read(parsed.nonce) == opening


async def test_a_record_of_a_deleted_id_is_not_put_back_by_its_opening_events(
    log: PostgresResponseEventLog,
) -> None:
    """The record's insert keeps its guard inside the combined statement: an id deleted
    before stays deleted (the events are the log's; they go with the record's retention)."""
    store = PostgresResponseStore(log.pool, log)
    record = StoredResponse(id="resp_deleted", owner_scope="alice", model="background-mock")
    await store.put_response(record)
    assert await store.delete_response("resp_deleted", "alice")
    await store.put_response_and_log(record, "run", [{"type": "x", "sequence_number": 0}])
    assert await store.get_response("resp_deleted", "alice") is None
