"""PostgresRunCoordinator against the real server: leases across replicas, the pause index."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import AsyncExitStack
from datetime import UTC, datetime, timedelta
from typing import Any

import psycopg
import pytest
from langchain_core.messages import HumanMessage

from demo.graphs.review import interruptible_approval_graph
from lgos import ServerResources, ServerSettings, open_resources
from lgos.core.coordinator import InMemoryRunCoordinator, RunCoordinator
from lgos.core.errors import RunBusyError
from lgos.integrations.postgres import PostgresRunCoordinator, RunCapacityError

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


def settings(uri: str, pool_size: int = 4) -> ServerSettings:
    return ServerSettings(POSTGRES_URI=uri, POSTGRES_POOL_SIZE=pool_size, BACKGROUND="none")


@pytest.fixture
async def replicas(module_database: str) -> AsyncIterator[tuple[ServerResources, ServerResources]]:
    """Two independent resource sets (own pools) on one database: two API replicas."""
    async with AsyncExitStack() as stack:
        first = await stack.enter_async_context(open_resources(settings(module_database)))
        second = await stack.enter_async_context(open_resources(settings(module_database)))
        yield first, second


def coordinator(resources: ServerResources) -> PostgresRunCoordinator:
    assert isinstance(resources.run_coordinator, PostgresRunCoordinator)
    return resources.run_coordinator


async def wait_until(condition: object, what: str, seconds: float = 10.0) -> None:
    assert callable(condition)
    deadline = asyncio.get_running_loop().time() + seconds
    while not await condition():
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"timed out waiting until {what}")
        await asyncio.sleep(0.02)


async def lgos_locks_held(uri: str) -> int:
    async with await psycopg.AsyncConnection.connect(uri, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
        )
        row = await cur.fetchone()
        assert row is not None
        return int(row[0])


@pytest.mark.parametrize("kind", ["postgres", "memory"])
async def test_keeps_the_run_coordinator_contract(
    kind: str, replicas: tuple[ServerResources, ServerResources]
) -> None:
    """What the runner relies on, checked the same way on both implementations: a lease is
    exclusive and fails fast, it is released on exit and on cancellation, and the pause
    index records, finds and forgets a run."""
    runs: RunCoordinator = (
        coordinator(replicas[0]) if kind == "postgres" else InMemoryRunCoordinator()
    )
    key = f"contract-{kind}"
    async with runs.lease(key):
        with pytest.raises(RunBusyError):
            async with runs.lease(key):
                pytest.fail("a second holder entered a held lease")
        await runs.mark_paused(key)
    async with runs.lease(key):  # released on exit
        pass

    entered = asyncio.Event()

    async def hold() -> None:
        async with runs.lease(key):
            entered.set()
            await asyncio.Event().wait()

    holder = asyncio.create_task(hold())
    await entered.wait()
    holder.cancel()
    with pytest.raises(asyncio.CancelledError):
        await holder
    async with runs.lease(key):  # released on cancellation
        pass

    paused_at = await runs.paused_at(key)
    assert paused_at is not None
    later = datetime.now(UTC) + timedelta(minutes=1)
    assert key in await runs.paused_before(later, 100)
    assert key not in await runs.paused_before(paused_at - timedelta(minutes=1), 100)
    await runs.mark_done(key)
    assert await runs.paused_at(key) is None
    assert key not in await runs.paused_before(later, 100)


async def test_a_lease_excludes_every_other_holder_on_any_replica(
    replicas: tuple[ServerResources, ServerResources],
) -> None:
    first, second = (coordinator(r) for r in replicas)
    async with first.lease("run-a"):
        with pytest.raises(RunBusyError):
            async with second.lease("run-a"):
                pytest.fail("the second replica entered a held lease")
        # The same replica is refused too: each lease is its own database session.
        with pytest.raises(RunBusyError):
            async with first.lease("run-a"):
                pytest.fail("the same replica entered a held lease twice")
        # Other runs are independent.
        async with second.lease("run-b"):
            pass
    async with second.lease("run-a"):
        with pytest.raises(RunBusyError):
            async with first.lease("run-a"):
                pytest.fail("the first replica entered the second's lease")


async def test_busy_refusals_give_their_connections_back(
    replicas: tuple[ServerResources, ServerResources], module_database: str
) -> None:
    first, second = (coordinator(r) for r in replicas)
    pool = replicas[1].pool
    async with first.lease("run-refusals"):
        for _ in range(20):
            with pytest.raises(RunBusyError):
                async with second.lease("run-refusals"):
                    pass
        assert await lgos_locks_held(module_database) == 1
    assert pool.get_stats()["pool_available"] == pool.max_size
    assert await lgos_locks_held(module_database) == 0


async def test_a_cancelled_holder_releases_its_lease(
    replicas: tuple[ServerResources, ServerResources], module_database: str
) -> None:
    first, second = (coordinator(r) for r in replicas)
    entered = asyncio.Event()

    async def hold() -> None:
        async with first.lease("run-cancel"):
            entered.set()
            await asyncio.Event().wait()

    holder = asyncio.create_task(hold())
    await entered.wait()
    holder.cancel()
    with pytest.raises(asyncio.CancelledError):
        await holder
    async with second.lease("run-cancel"):
        pass
    assert await lgos_locks_held(module_database) == 0
    pool = replicas[0].pool
    assert pool.get_stats()["pool_available"] == pool.max_size


async def test_a_holder_cancelled_again_during_release_still_releases(
    replicas: tuple[ServerResources, ServerResources],
    monkeypatch: pytest.MonkeyPatch,
    module_database: str,
) -> None:
    """A second cancel lands while the unlock runs: the shielded release finishes anyway."""
    first, second = (coordinator(r) for r in replicas)
    entered = asyncio.Event()

    async def hold() -> None:
        async with first.lease("run-cancel-twice"):
            entered.set()
            await asyncio.Event().wait()

    # Hold the release at its start, so the second cancel surely lands while it runs.
    unlocking, finish_unlock = asyncio.Event(), asyncio.Event()
    unlock = first._unlock

    async def gated_unlock(*args: Any) -> None:
        unlocking.set()
        await finish_unlock.wait()
        await unlock(*args)

    monkeypatch.setattr(first, "_unlock", gated_unlock)
    holder = asyncio.create_task(hold())
    await entered.wait()
    holder.cancel()
    await unlocking.wait()  # the holder is inside its shielded release now
    holder.cancel()
    finish_unlock.set()
    with pytest.raises(asyncio.CancelledError):
        await holder

    async def released() -> bool:
        try:
            async with second.lease("run-cancel-twice"):
                return True
        except RunBusyError:
            return False

    await wait_until(released, "the cancelled holder's lease is released")
    pool = replicas[0].pool

    async def connections_back() -> bool:
        return bool(pool.get_stats()["pool_available"] == pool.max_size)

    await wait_until(connections_back, "the lease connection is back in the pool")


async def test_leases_cannot_take_the_whole_pool(module_database: str) -> None:
    """Half the pool is for leases; the rest keeps checkpoint I/O and the pause index going."""
    async with open_resources(settings(module_database, pool_size=4)) as resources:
        limited = PostgresRunCoordinator(resources.pool, lease_wait_seconds=0.2)
        assert limited.max_leases == 2
        async with limited.lease("slot-1"), limited.lease("slot-2"):
            with pytest.raises(RunCapacityError) as refused:
                async with limited.lease("slot-3"):
                    pytest.fail("a third lease exceeded the budget")
            assert refused.value.status_code == 503
            # A run holding its lease can still record its pause and read checkpoints.
            await limited.mark_paused("slot-1")
            assert await limited.paused_at("slot-1") is not None
            await limited.mark_done("slot-1")
        async with limited.lease("slot-3"):
            pass


async def test_a_lease_waits_for_a_free_slot(module_database: str) -> None:
    async with open_resources(settings(module_database, pool_size=2)) as resources:
        limited = PostgresRunCoordinator(resources.pool, lease_wait_seconds=10)
        assert limited.max_leases == 1
        entered_second = asyncio.Event()

        async def second() -> None:
            async with limited.lease("queued"):
                entered_second.set()

        async with limited.lease("first"):
            waiter = asyncio.create_task(second())

            async def queued_for_a_slot() -> bool:
                # The second lease is parked on the slot semaphore (CPython's waiter queue).
                return bool(limited._slots._waiters)

            await wait_until(queued_for_a_slot, "the second lease waits for a slot")
            assert not entered_second.is_set()
        await waiter
        assert entered_second.is_set()


async def backdate(uri: str, key: str, age: timedelta) -> None:
    async with await psycopg.AsyncConnection.connect(uri, autocommit=True) as conn:
        await conn.execute(
            "UPDATE lgos_paused_runs SET paused_at = now() - %s WHERE thread_id = %s", (age, key)
        )


async def test_pause_index(
    replicas: tuple[ServerResources, ServerResources], module_database: str
) -> None:
    first, second = (coordinator(r) for r in replicas)
    keys = [f"index-{n}" for n in range(5)]
    before = datetime.now(UTC)
    for key in keys:
        await first.mark_paused(key)
    paused = await second.paused_at("index-0")
    assert paused is not None
    assert paused.tzinfo is not None
    assert before - timedelta(minutes=1) < paused < datetime.now(UTC) + timedelta(minutes=1)
    assert await second.paused_at("never-paused") is None

    # index-3 is the oldest, then index-1, then index-4; 0 and 2 are fresh.
    await backdate(module_database, "index-3", timedelta(hours=3))
    await backdate(module_database, "index-1", timedelta(hours=2))
    await backdate(module_database, "index-4", timedelta(hours=1))
    cutoff = datetime.now(UTC) - timedelta(minutes=30)
    assert await second.paused_before(cutoff, 10) == ["index-3", "index-1", "index-4"]
    assert await second.paused_before(cutoff, 2) == ["index-3", "index-1"]

    # Pausing again restarts the clock; done forgets the run.
    await first.mark_paused("index-3")
    await first.mark_done("index-1")
    await first.mark_done("index-1")  # idempotent
    assert await second.paused_before(cutoff, 10) == ["index-4"]
    assert await second.paused_at("index-1") is None
    for key in keys:
        await first.mark_done(key)


async def test_expired_pauses_are_found_through_the_index(module_database: str) -> None:
    async with (
        open_resources(settings(module_database)),
        await psycopg.AsyncConnection.connect(module_database, autocommit=True) as conn,
    ):
        await conn.execute("SET enable_seqscan = off")
        cur = await conn.execute(
            "EXPLAIN SELECT thread_id FROM lgos_paused_runs WHERE paused_at < now() "
            "ORDER BY paused_at, thread_id LIMIT 500"
        )
        plan = "\n".join(str(row[0]) for row in await cur.fetchall())
    assert "lgos_paused_runs_paused_at_idx" in plan


async def index_rows(uri: str) -> set[str]:
    async with await psycopg.AsyncConnection.connect(uri, autocommit=True) as conn:
        cur = await conn.execute("SELECT thread_id FROM lgos_paused_runs")
        return {str(row[0]) for row in await cur.fetchall()}


async def test_a_run_is_indexed_while_it_executes(
    replicas: tuple[ServerResources, ServerResources], module_database: str
) -> None:
    """A run is in the index from its first lease, so a crash mid-run still expires; a lease
    that neither paused nor left a checkpoint (a rejected answer) leaves no row behind."""
    first, second = (coordinator(r) for r in replicas)
    async with first.lease("executing"):
        assert "executing" in await index_rows(module_database)
        assert await second.paused_at("executing") is not None
    assert "executing" not in await index_rows(module_database)

    async with first.lease("pauses"):
        await first.mark_paused("pauses")
    assert "pauses" in await index_rows(module_database)
    # Answering it later keeps the time it paused until it pauses again or finishes.
    paused = await second.paused_at("pauses")
    async with second.lease("pauses"):
        assert await second.paused_at("pauses") == paused
    assert await second.paused_at("pauses") == paused
    async with second.lease("pauses"):
        await second.mark_done("pauses")
    assert "pauses" not in await index_rows(module_database)


async def test_a_lease_that_leaves_an_orphan_checkpoint_keeps_its_row(
    replicas: tuple[ServerResources, ServerResources], module_database: str
) -> None:
    """If a run's cleanup failed, its checkpoint has no other owner: the row stays so the
    sweep deletes it after the TTL."""
    first = coordinator(replicas[0])
    graph = interruptible_approval_graph(replicas[0].checkpointer)
    async with first.lease("orphan"):
        await graph.ainvoke(
            {"messages": [HumanMessage("orphaned")]}, {"configurable": {"thread_id": "orphan"}}
        )
    assert "orphan" in await index_rows(module_database)


async def test_a_lease_knows_when_no_earlier_execution_left_work(
    replicas: tuple[ServerResources, ServerResources], module_database: str
) -> None:
    """`leased_fresh` lets a continued run skip its checkpoint read. It must never say fresh
    for a run that paused, or whose holder died mid-run (on any replica): that run would
    start over instead of continuing."""
    first, second = (coordinator(r) for r in replicas)
    async with first.lease("run-fresh"):
        assert first.leased_fresh("run-fresh")  # never ran
    async with second.lease("run-fresh"):
        # Its earlier execution left no checkpoint, so its index row went with the lease.
        assert second.leased_fresh("run-fresh")
        await second.mark_paused("run-fresh")
    async with first.lease("run-fresh"):
        assert not first.leased_fresh("run-fresh")  # paused: the answer continues it
        await first.mark_done("run-fresh")
    # A holder that died mid-run never released: its row stays behind.
    async with await psycopg.AsyncConnection.connect(module_database, autocommit=True) as conn:
        await conn.execute(
            "INSERT INTO lgos_paused_runs (thread_id, paused_at) VALUES ('run-died', now())"
        )
    async with second.lease("run-died"):
        assert not second.leased_fresh("run-died")
    assert not InMemoryRunCoordinator().leased_fresh("run-fresh")
