"""What an API process remembers of the engine's view of a run (`RecentRuns`): polls of a run
on an engine whose workers log every end read the engine at most once every `max_age` seconds,
one read at a time, and never lose the view they have to a failed read."""

from __future__ import annotations

import asyncio

import pytest

from lgos.core.background import BackgroundRun
from lgos.service.recent_runs import RecentRuns
from tests.background.test_job import job_worker, submitted

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]

JOB = submitted(
    {"model": "background-mock", "input": "Quarterly risks", "background": True},
    job_worker.registry(),
)


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def run(status: str = "queued", run_id: str = "a" * 32) -> BackgroundRun:
    return BackgroundRun(id=run_id, job=JOB, status=status)  # type: ignore[arg-type]


class Engine:
    """The engine's answers to `RecentRuns`' reads: counted, and each held until released."""

    def __init__(self, answer: BackgroundRun | Exception | None) -> None:
        self.answer = answer
        self.reads = 0
        self.release = asyncio.Event()

    async def read(self) -> BackgroundRun | None:
        self.reads += 1
        await self.release.wait()
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


async def settled(recent: RecentRuns) -> None:
    """Until the reads under way have ended."""
    await asyncio.gather(*recent._reads)


async def test_a_view_younger_than_max_age_is_not_read_again() -> None:
    clock = Clock()
    recent = RecentRuns(1.0, clock=clock)
    recent.remember(run())
    engine = Engine(run("in_progress"))
    for _ in range(50):
        recent.read_again_if_old("a" * 32, engine.read)
        clock.now += 0.01
    assert engine.reads == 0
    assert recent.get("a" * 32) == run()


async def test_an_old_view_is_read_again_once_and_replaced() -> None:
    clock = Clock()
    recent = RecentRuns(1.0, clock=clock)
    recent.remember(run())
    clock.now += 1.0
    engine = Engine(run("cancelled"))
    for _ in range(10):  # polls while the read is under way: one read
        recent.read_again_if_old("a" * 32, engine.read)
        await asyncio.sleep(0)
    assert engine.reads == 1
    assert recent.get("a" * 32) == run()  # the old view until the engine answers
    engine.release.set()
    await settled(recent)
    assert recent.get("a" * 32) == run("cancelled")
    recent.read_again_if_old("a" * 32, engine.read)  # just read: not again
    assert engine.reads == 1


@pytest.mark.parametrize("answer", [None, RuntimeError("engine away")])
async def test_a_failed_or_empty_read_keeps_the_view_until_max_age(
    answer: Exception | None,
) -> None:
    clock = Clock()
    recent = RecentRuns(1.0, clock=clock)
    recent.remember(run())
    clock.now += 1.0
    engine = Engine(answer)
    engine.release.set()
    recent.read_again_if_old("a" * 32, engine.read)
    await settled(recent)
    assert recent.get("a" * 32) == run()
    recent.read_again_if_old("a" * 32, engine.read)
    assert engine.reads == 1
    clock.now += 1.0
    recent.read_again_if_old("a" * 32, engine.read)
    await settled(recent)
    assert engine.reads == 2


async def test_unknown_and_forgotten_runs_are_not_read() -> None:
    recent = RecentRuns(0.0)
    engine = Engine(run())
    recent.read_again_if_old("a" * 32, engine.read)
    recent.remember(run())
    recent.forget("a" * 32)
    recent.read_again_if_old("a" * 32, engine.read)
    assert engine.reads == 0
    assert recent.get("a" * 32) is None


async def test_the_oldest_views_go_first_beyond_capacity() -> None:
    recent = RecentRuns(1.0, capacity=2)
    for digit in "abc":
        recent.remember(run(run_id=digit * 32))
    assert [recent.get(d * 32) is not None for d in "abc"] == [False, True, True]
