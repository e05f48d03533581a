"""A busy pool is not an outage: a request waits for a connection while the database answers,
and answers 503 `database_unavailable` only when it does not. Real PostgreSQL."""

from __future__ import annotations

import asyncio

import anyio
import pytest
from psycopg_pool import PoolTimeout

from lgos import ServerSettings, create_app
from lgos.integrations.postgres.pool import new_pool
from tests.support.processes import free_port
from tests.support.sdk import in_process_sdk

pytestmark = [pytest.mark.anyio, pytest.mark.postgres, pytest.mark.timeout(120)]

# Far shorter than any real setting, so a wait runs out many times within one test.
WAIT_SECONDS = 0.2
# A bound for a state the pool reaches by itself (never a timing assertion).
DEADLINE_SECONDS = 30


async def test_a_checkout_outwaits_a_busy_pool(module_database: str) -> None:
    async with new_pool(module_database, 2, wait_seconds=WAIT_SECONDS) as pool:
        held = [await pool.getconn(), await pool.getconn()]
        waiter = asyncio.create_task(pool.getconn())
        with anyio.fail_after(DEADLINE_SECONDS):
            # The waiter's first wait ran out while both connections were still held (the
            # pool's public counter; psycopg_pool offers no event to await).
            while pool.get_stats().get("requests_errors", 0) < 1:  # noqa: ASYNC110
                await anyio.sleep(0.01)
        assert not waiter.done()
        await pool.putconn(held.pop())
        with anyio.fail_after(DEADLINE_SECONDS):
            conn = await waiter
        cursor = await conn.execute("SELECT 1 AS one")
        assert await cursor.fetchone() == {"one": 1}
        for connection in [conn, *held]:
            await pool.putconn(connection)


async def test_a_checkout_from_an_unreachable_database_times_out() -> None:
    unreachable = f"postgresql://postgres@127.0.0.1:{free_port()}/postgres"
    pool = new_pool(unreachable, 2, wait_seconds=WAIT_SECONDS)
    await pool.open(wait=False)
    try:
        with anyio.fail_after(DEADLINE_SECONDS), pytest.raises(PoolTimeout):
            await pool.getconn()
    finally:
        await pool.close(timeout=0)


async def test_a_burst_on_a_small_pool_is_served_not_refused(module_database: str) -> None:
    """The report of issue 23's last session: many background creates at once on one API got
    503 `database_unavailable` from a pool that was only busy."""
    settings = ServerSettings(
        POSTGRES_URI=module_database,
        POSTGRES_POOL_SIZE=2,
        POSTGRES_WAIT_SECONDS=WAIT_SECONDS,
        BACKGROUND="memory",
        INTERRUPT_SWEEP_INTERVAL_MINUTES=0,
        RESPONSE_SWEEP_INTERVAL_MINUTES=0,
    )
    app = create_app("demo.registry:create_registry", settings=settings)
    async with app.router.lifespan_context(app), in_process_sdk(app) as client:
        created = await asyncio.gather(
            *(
                client.responses.create(
                    model="background-mock",
                    input=f"report {n}",
                    background=True,
                    metadata={"lgos_settings": '{"delay_seconds": 0}'},
                )
                for n in range(60)
            )
        )
    assert {response.status for response in created} <= {"queued", "in_progress", "completed"}
    assert len({response.id for response in created}) == 60
