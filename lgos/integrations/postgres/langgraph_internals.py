"""The parts of LangGraph's PostgreSQL saver and store (pinned: langgraph-checkpoint-postgres
3.2.0, langgraph-checkpoint 4.3.2) that LGOS uses although LangGraph does not document them, in
one place. tests/internals/test_langgraph_postgres.py checks each one's shape, so the upgrade
that changes one fails there first. docs/design-choices.md says why each is needed.
"""

from __future__ import annotations

import asyncio
from typing import Any

import langgraph.checkpoint.postgres.aio as saver_module
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from langgraph.store.postgres.aio import AsyncPostgresStore


def widen_saver_lock(saver: AsyncPostgresSaver, permits: int) -> None:
    """Let `permits` of the saver's calls run at once instead of one.

    The saver serializes all its I/O through one `asyncio.Lock` per instance, its `lock`
    (LangGraph #7259), needed only for a single shared connection. On a pool each call checks
    out its own connection, so the lock only queues checkpoint writes behind one another.
    """
    saver.lock = asyncio.Semaphore(permits)  # type: ignore[assignment]


def saver_pool(checkpointer: Any) -> Any:
    """The pool (or connection) a PostgreSQL saver writes through (its `conn`); None for any
    other checkpointer. Its checkpoints are in that database's `checkpoints`,
    `checkpoint_blobs` and `checkpoint_writes`, keyed by `thread_id` (what its
    `adelete_thread` deletes)."""
    if not isinstance(checkpointer, AsyncPostgresSaver):
        return None
    return checkpointer.conn


def stop_store_batcher(store: AsyncPostgresStore) -> None:
    """Cancel the task the store batches its operations in (`_task`, started by the store
    itself and cancelled only when it is garbage collected), so it cannot run against a pool
    that is closing."""
    task = getattr(store, "_task", None)
    if task is not None:
        task.cancel()


# The name the saver's module imports `asyncio` under (and calls `asyncio.to_thread` through).
_ASYNCIO = "asyncio"


class InLoopSaver(AsyncPostgresSaver):
    """LangGraph's PostgreSQL saver, unchanged except that it (de)serializes channel values and
    writes on the event loop, not in a thread (see `serialize_in_loop`)."""


class _SaverAsyncio:
    """What the saver's module finds under its name `asyncio`: the module itself, except that
    `to_thread` calls an `InLoopSaver`'s own methods in place.

    The saver hands each dump and load of a checkpoint to a thread (`asyncio.to_thread`) so a
    large state does not hold the loop. A background run's states are small: the dump takes a
    few microseconds, the hop (a pool thread woken, the GIL handed over and back, the loop
    woken through its self-pipe) some 45 µs of CPU, on each of a run's checkpoint writes."""

    def __getattr__(self, name: str) -> Any:
        return getattr(asyncio, name)

    @staticmethod
    async def to_thread(func: Any, /, *args: Any, **kwargs: Any) -> Any:
        if isinstance(getattr(func, "__self__", None), InLoopSaver):
            return func(*args, **kwargs)
        return await asyncio.to_thread(func, *args, **kwargs)


def serialize_in_loop() -> bool:
    """Have every `InLoopSaver` serialize on the loop from now on; False when the saver's module
    no longer calls threads through its global `asyncio` (then `InLoopSaver` is the stock
    saver). Other savers in the process keep their threads."""
    current = getattr(saver_module, _ASYNCIO, None)
    if isinstance(current, _SaverAsyncio):
        return True
    if current is not asyncio:
        return False
    setattr(saver_module, _ASYNCIO, _SaverAsyncio())
    return True
