"""Run coordination: one request at a time per interrupt run, and the pause index.

LangGraph has no lease: two resumes of one interrupt both execute. The coordinator gives each
run a fail-fast lease (a second holder gets `RunBusyError`, never a queue) and remembers when a
run paused, so abandoned pauses can be found without scanning checkpoints.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from datetime import UTC, datetime
from typing import Any, Protocol

from lgos.core.errors import RunBusyError


class RunCoordinator(Protocol):
    def lease(self, key: str) -> AbstractAsyncContextManager[None]:
        """Hold `key` exclusively; raise `RunBusyError` at once when another holder has it.

        The release must happen even when the holder is cancelled.
        """
        ...

    def leased_fresh(self, key: str) -> bool:
        """Under the lease on `key`: whether taking it proved that no earlier execution left
        work to continue (the run never ran, or every run of it ended cleanly). False when
        it cannot tell: the caller then looks at the checkpoint."""
        ...

    async def mark_paused(self, key: str) -> None:
        """Record that `key` is paused now (called under its lease)."""
        ...

    async def mark_done(self, key: str) -> None:
        """Forget `key`: it finished or was deleted (called under its lease)."""
        ...

    async def finish(self, key: str, checkpointer: Any) -> bool:
        """Under its lease: the run of `key` finished. A coordinator that deletes thread `key`
        of `checkpointer` in the round trip that releases the lease (and forgets `key`, as
        `mark_done`) takes that on and returns True; else False, and the caller deletes the
        thread and calls `mark_done` now."""
        ...

    async def log_with_release(
        self, key: str, log: Any, run_id: str, events: Sequence[Mapping[str, Any]]
    ) -> bool:
        """Under its lease: `events` are the last that the holder appends to `log` for
        engine run `run_id` (a run's logged end). A coordinator that appends them in the round
        trip that releases the lease, committed before the lease is free (so whoever takes
        it next reads them), takes that on and returns True; else False, and the caller
        appends them now."""
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

    def leased_fresh(self, key: str) -> bool:
        return False  # it keeps no trace of past executions: the checkpoint tells

    async def mark_paused(self, key: str) -> None:
        self._paused[key] = time.time()

    async def mark_done(self, key: str) -> None:
        self._paused.pop(key, None)

    async def finish(self, key: str, checkpointer: Any) -> bool:
        return False  # no round trip to save

    async def log_with_release(
        self, key: str, log: Any, run_id: str, events: Sequence[Mapping[str, Any]]
    ) -> bool:
        return False

    async def paused_before(self, cutoff: datetime, limit: int) -> list[str]:
        threshold = cutoff.timestamp()
        expired = sorted((at, key) for key, at in self._paused.items() if at < threshold)
        return [key for _, key in expired[:limit]]

    async def paused_at(self, key: str) -> datetime | None:
        at = self._paused.get(key)
        return None if at is None else datetime.fromtimestamp(at, UTC)
