"""LangGraph's PostgreSQL saver and store still have the internals LGOS touches
(lgos/integrations/postgres/langgraph_internals.py): an upgrade that changes one fails here,
not as checkpoint writes queued one by one or a batch task left running on a closed pool."""

from __future__ import annotations

import asyncio
import inspect
import threading
from typing import Any

import pytest
from langgraph.checkpoint.base import empty_checkpoint
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.checkpoint.serde.jsonplus import JsonPlusSerializer
from langgraph.store.postgres.aio import AsyncPostgresStore
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from lgos.integrations.postgres.langgraph_internals import (
    InLoopSaver,
    saver_pool,
    serialize_in_loop,
    stop_store_batcher,
    widen_saver_lock,
)

pytestmark = pytest.mark.anyio

# Never opened: constructing the saver and the store does not connect.
UNUSED_URI = "postgresql://nobody@127.0.0.1:1/none"
# What LangGraph documents for a saver's connections (and LGOS's pool passes).
SAVER_CONNECTION = {"autocommit": True, "row_factory": dict_row, "prepare_threshold": 0}


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


def test_the_saver_hands_its_dumps_and_loads_to_threads_through_its_module_asyncio() -> None:
    # `serialize_in_loop` stands in for the name `asyncio` of the saver's module; the saver must
    # still look `to_thread` up there, on its own bound methods, or the stand-in changes nothing.
    import langgraph.checkpoint.postgres.aio as saver_module

    assert serialize_in_loop()
    assert getattr(saver_module, "asyncio", None) is not asyncio  # the stand-in
    assert saver_module.asyncio.Lock is asyncio.Lock  # everything else is the module's
    calls = {
        AsyncPostgresSaver.aput: "self._dump_blobs",
        AsyncPostgresSaver.aput_writes: "self._dump_writes",
        AsyncPostgresSaver._load_checkpoint_tuple: "self._load_writes",
    }
    for method, dump in calls.items():
        source = "".join(inspect.getsource(method).split())
        assert f"asyncio.to_thread({dump}," in source, method.__name__


class _Recording(JsonPlusSerializer):
    """Notes the thread of every dump and load."""

    def __init__(self) -> None:
        super().__init__()
        self.threads: set[int] = set()

    def dumps_typed(self, obj: Any) -> tuple[str, bytes]:
        self.threads.add(threading.get_ident())
        return super().dumps_typed(obj)

    def loads_typed(self, data: tuple[str, bytes]) -> Any:
        self.threads.add(threading.get_ident())
        return super().loads_typed(data)


async def _round_trip(saver: AsyncPostgresSaver, thread_id: str) -> Any:
    config: Any = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
    checkpoint = empty_checkpoint()
    checkpoint["channel_values"] = {"messages": [{"role": "user", "content": "hi"}], "n": 1}
    versions = {channel: saver.get_next_version(None, None) for channel in ("messages", "n")}
    checkpoint["channel_versions"] = versions
    saved = await saver.aput(config, checkpoint, {"source": "input", "step": -1}, versions)
    await saver.aput_writes(saved, [("messages", [{"role": "ai", "content": "yes"}])], "task-1")
    return await saver.aget_tuple(saved)


async def test_an_in_loop_saver_serializes_on_the_loop_and_a_stock_saver_in_threads(
    database: str,
) -> None:
    assert serialize_in_loop()
    async with AsyncConnectionPool(database, open=False, kwargs=SAVER_CONNECTION) as pool:
        stock = AsyncPostgresSaver(pool, serde=_Recording())
        await stock.setup()
        in_loop = InLoopSaver(pool, serde=_Recording())
        here = threading.get_ident()

        for saver, thread_id in ((stock, "stock"), (in_loop, "in-loop")):
            loaded = await _round_trip(saver, thread_id)
            assert loaded is not None
            assert loaded.checkpoint["channel_values"] == {
                "messages": [{"role": "user", "content": "hi"}],
                "n": 1,
            }
            assert [(channel, value) for _, channel, value in loaded.pending_writes or []] == [
                ("messages", [{"role": "ai", "content": "yes"}])
            ]

        assert isinstance(stock.serde, _Recording)
        assert isinstance(in_loop.serde, _Recording)
        assert stock.serde.threads - {here}  # (it loads channel values on the loop already)
        assert in_loop.serde.threads == {here}
