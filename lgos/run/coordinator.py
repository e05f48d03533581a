"""Run coordination: one request at a time per interrupt run, and the pause index.

LangGraph has no lease: two resumes of one interrupt both execute. The coordinator gives each
run a fail-fast lease (a second holder gets `RunBusyError`, never a queue) and remembers when a
run paused, so abandoned pauses can be found without scanning checkpoints.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Protocol, runtime_checkable

from lgos.errors import RunBusyError


@runtime_checkable
class RunCoordinator(Protocol):
    def lease(self, key: str) -> AbstractAsyncContextManager[None]:
        """Hold `key` exclusively; raise `RunBusyError` at once when another holder has it.

        The release must happen even when the holder is cancelled.
        """
        ...

    async def mark_paused(self, key: str) -> None:
        """Record that `key` is paused now (called under its lease)."""
        ...

    async def mark_done(self, key: str) -> None:
        """Forget `key`: it finished or was deleted (called under its lease)."""
        ...

    async def paused_before(self, cutoff: datetime, limit: int) -> list[str]:
        """Keys paused before `cutoff`, oldest first."""
        ...

    async def paused_at(self, key: str) -> datetime | None:
        """When `key` paused, or None when it is not paused."""
        ...


class InMemoryRunCoordinator:
    """For one process. Leases and pauses die with it."""

    def __init__(self) -> None:
        self._held: set[str] = set()
        self._paused: dict[str, float] = {}

    @asynccontextmanager
    async def _lease(self, key: str) -> AsyncIterator[None]:
        # No await between the check and the add: atomic on one event loop.
        if key in self._held:
            raise RunBusyError()
        self._held.add(key)
        try:
            yield
        finally:
            self._held.discard(key)

    def lease(self, key: str) -> AbstractAsyncContextManager[None]:
        return self._lease(key)

    async def mark_paused(self, key: str) -> None:
        self._paused[key] = time.time()

    async def mark_done(self, key: str) -> None:
        self._paused.pop(key, None)

    async def paused_before(self, cutoff: datetime, limit: int) -> list[str]:
        threshold = cutoff.timestamp()
        expired = sorted((at, key) for key, at in self._paused.items() if at < threshold)
        return [key for _, key in expired[:limit]]

    async def paused_at(self, key: str) -> datetime | None:
        at = self._paused.get(key)
        return None if at is None else datetime.fromtimestamp(at, UTC)


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
