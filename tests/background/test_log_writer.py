"""A streamed run's worker writes its events to the log in order, one statement at a time:
what comes while a statement is in flight goes in the next one, or with the run's end."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from typing import Any

import pytest

from lgos.background.executor import _LogWriter
from lgos.core.event_log import InMemoryResponseEventLog

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(30)]


class GatedLog(InMemoryResponseEventLog):
    """An in-memory log whose appends wait at a gate (one goes through per release), and
    report the statements they made (`written`) or the failure they raised (`failed`)."""

    def __init__(self, fail: bool = False) -> None:
        super().__init__()
        self.gate = asyncio.Semaphore(0)
        self.at_gate = asyncio.Event()
        self.written: asyncio.Queue[list[int]] = asyncio.Queue()
        self.failed = asyncio.Event()
        self.fail = fail

    async def append(self, run_id: str, events: Sequence[Mapping[str, Any]]) -> None:
        self.at_gate.set()
        await self.gate.acquire()
        if self.fail:
            self.failed.set()
            raise ConnectionError("the database went away")
        await super().append(run_id, events)
        self.written.put_nowait([int(event["sequence_number"]) for event in events])


def batch(*numbers: int) -> list[Any]:
    return [{"type": "response.output_text.delta", "sequence_number": n} for n in numbers]


async def test_events_that_come_during_a_statement_go_with_the_end() -> None:
    log = GatedLog()
    async with _LogWriter(log, "run") as writer:
        writer.add(batch(3))
        await asyncio.wait_for(log.at_gate.wait(), 10)  # the first statement is in flight
        writer.add(batch(4))
        writer.add(batch(5, 6))
        ending = writer.rest()
        log.gate.release()
        # The events that came meanwhile are not written on their own: they are the rest.
        assert await asyncio.wait_for(ending, 10) == batch(4, 5, 6)
    assert log.written.get_nowait() == [3]
    assert log.written.empty()
    assert await log.read("run") == batch(3)


async def test_events_that_come_during_a_statement_go_in_the_next_one_together() -> None:
    log = GatedLog()
    async with _LogWriter(log, "run") as writer:
        writer.add(batch(3))
        await asyncio.wait_for(log.at_gate.wait(), 10)
        writer.add(batch(4))
        writer.add(batch(5, 6))
        log.gate.release()
        assert await asyncio.wait_for(log.written.get(), 10) == [3]
        log.gate.release()
        assert await asyncio.wait_for(log.written.get(), 10) == [4, 5, 6]
        assert await asyncio.wait_for(writer.rest(), 10) == []
        # After `rest`, the run's end writes what comes: the writer writes no more.
        writer.add(batch(7))
        log.gate.release()
    assert await log.read("run") == batch(3, 4, 5, 6)
    assert log.written.empty()


async def test_a_failed_statement_is_raised_by_the_end() -> None:
    log = GatedLog(fail=True)
    async with _LogWriter(log, "run") as writer:
        writer.add(batch(3))
        await asyncio.wait_for(log.at_gate.wait(), 10)
        ending = writer.rest()
        log.gate.release()
        with pytest.raises(ConnectionError):
            await asyncio.wait_for(ending, 10)


async def test_a_failed_statement_is_raised_by_the_next_add() -> None:
    log = GatedLog(fail=True)
    async with _LogWriter(log, "run") as writer:
        writer.add(batch(3))
        log.gate.release()
        await asyncio.wait_for(log.failed.wait(), 10)
        with pytest.raises(ConnectionError):
            writer.add(batch(4))


async def test_leaving_without_an_end_stops_the_statement_in_flight() -> None:
    log = GatedLog()
    writer = _LogWriter(log, "run")

    async def a_run_that_fails() -> None:
        async with writer:
            writer.add(batch(3))
            await asyncio.wait_for(log.at_gate.wait(), 10)
            raise RuntimeError("the run failed")

    with pytest.raises(RuntimeError):
        await a_run_that_fails()
    assert writer._writing is not None
    assert writer._writing.cancelled()
    assert await log.read("run") == []
