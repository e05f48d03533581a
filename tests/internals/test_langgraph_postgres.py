"""LangGraph's PostgreSQL saver and store still have the internals LGOS touches
(lgos/integrations/postgres/langgraph_internals.py): an upgrade that changes one fails here,
not as checkpoint writes queued one by one or a batch task left running on a closed pool."""

from __future__ import annotations

import asyncio
import inspect

import pytest
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.store.postgres.aio import AsyncPostgresStore
from psycopg_pool import AsyncConnectionPool

from lgos.integrations.postgres.langgraph_internals import (
    saver_pool,
    stop_store_batcher,
    widen_saver_lock,
)

pytestmark = pytest.mark.anyio

# Never opened: constructing the saver and the store does not connect.
UNUSED_URI = "postgresql://nobody@127.0.0.1:1/none"


async def test_the_saver_serializes_its_io_through_its_lock() -> None:
    saver = AsyncPostgresSaver(AsyncConnectionPool(UNUSED_URI, open=False))
    assert isinstance(saver.lock, asyncio.Lock)
    # Every query goes through `_cursor`, which holds the lock for the whole query.
    assert "async with self.lock" in inspect.getsource(AsyncPostgresSaver._cursor)
    widen_saver_lock(saver, 3)
    for _ in range(3):
        await asyncio.wait_for(saver.lock.acquire(), 5)
    assert saver.lock.locked()  # a fourth call waits


async def test_the_store_batches_in_a_task_it_owns() -> None:
    store = AsyncPostgresStore(AsyncConnectionPool(UNUSED_URI, open=False))
    task = store._task
    assert isinstance(task, asyncio.Task)
    assert not task.done()
    stop_store_batcher(store)
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_the_saver_writes_through_its_pool_and_deletes_a_thread_from_three_tables() -> None:
    # A run lease deletes a finished thread with its release (`PostgresRunCoordinator.finish`)
    # when the saver is on the lease's pool, from the tables `adelete_thread` deletes from.
    pool = AsyncConnectionPool(UNUSED_URI, open=False)
    assert saver_pool(AsyncPostgresSaver(pool)) is pool
    assert saver_pool(object()) is None
    source = inspect.getsource(AsyncPostgresSaver.adelete_thread)
    deleted = [
        line.split("FROM ")[1].split()[0] for line in source.splitlines() if "DELETE" in line
    ]
    assert deleted == ["checkpoints", "checkpoint_blobs", "checkpoint_writes"]
