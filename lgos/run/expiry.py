"""Expiry: delete the checkpoints of runs paused longer than a TTL, and the stored Responses,
Conversations and kept threads older than the retention period."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from lgos.core.coordinator import RunCoordinator
from lgos.core.errors import RunBusyError
from lgos.core.stored import ResponseStore


async def delete_expired_interrupt_runs(
    checkpointer: object,
    run_coordinator: RunCoordinator,
    *,
    older_than: timedelta,
    batch_size: int = 500,
) -> int:
    """Delete paused interrupt runs older than `older_than`; return how many were deleted.

    Busy runs are skipped (someone is answering them right now). Only runs the coordinator
    recorded as paused are touched, so the checkpoints of other applications sharing the saver
    are never read.
    """
    delete_thread = getattr(checkpointer, "adelete_thread", None)
    if delete_thread is None:
        raise TypeError("the checkpointer has no adelete_thread()")
    cutoff = datetime.now(UTC) - older_than
    deleted = 0
    while True:
        keys = await run_coordinator.paused_before(cutoff, batch_size)
        progressed = False
        for key in keys:
            try:
                async with run_coordinator.lease(key):
                    # Re-check under the lease: an answer may have resumed it meanwhile.
                    paused_at = await run_coordinator.paused_at(key)
                    if paused_at is None or paused_at >= cutoff:
                        continue
                    await delete_thread(key)
                    await run_coordinator.mark_done(key)
                    deleted += 1
                    progressed = True
            except RunBusyError:
                continue
        if len(keys) < batch_size or not progressed:
            return deleted


async def expire_stored_responses(
    store: ResponseStore, checkpointer: Any, *, older_than: timedelta, batch_size: int = 500
) -> int:
    """The retention sweep: delete Responses and Conversations older than `older_than`, and
    the checkpoints of kept threads unused that long. Returns how many records went."""
    cutoff = int((datetime.now(UTC) - older_than).timestamp())
    total = 0
    while True:
        deleted, threads = await store.expire(cutoff, batch_size)
        remove = getattr(checkpointer, "adelete_thread", None)
        for thread_id in threads:
            if remove is not None:
                await remove(thread_id)
            await store.forget_thread(thread_id)
        total += deleted
        if deleted < batch_size and len(threads) < batch_size:
            return total
