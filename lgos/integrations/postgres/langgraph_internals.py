"""The parts of LangGraph's PostgreSQL saver and store (pinned: langgraph-checkpoint-postgres
3.2.0, langgraph-checkpoint 4.3.2) that LGOS uses although LangGraph does not document them, in
one place. tests/internals/test_langgraph_postgres.py checks each one's shape, so the upgrade
that changes one fails there first. docs/design-choices.md says why each is needed.
"""

from __future__ import annotations

import asyncio
from typing import Any

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
