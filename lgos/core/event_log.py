"""The in-memory `ResponseEventLog`: lives and dies with the process. It sits in core, beside
the contract, because both the in-memory engine and the in-memory Response store keep one, and
the HTTP layer builds the latter without reaching into background/."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any


class InMemoryResponseEventLog:
    """The log of `InMemoryBackgroundBackend`: lives and dies with the process."""

    def __init__(self) -> None:
        # Each run's events by sequence number, kept as they were appended.
        self._events: dict[str, dict[int, Mapping[str, Any]]] = {}
        self._changed: dict[str, asyncio.Event] = {}

    async def append(self, run_id: str, events: Sequence[Mapping[str, Any]]) -> None:
        stored = self._events.setdefault(run_id, {})
        for event in events:
            stored.setdefault(int(event["sequence_number"]), event)
        changed = self._changed.pop(run_id, None)
        if changed is not None:
            changed.set()

    async def read(self, run_id: str, after: int = -1) -> list[Mapping[str, Any]]:
        stored = self._events.get(run_id, {})
        return [stored[number] for number in sorted(stored) if number > after]

    async def read_or_start(
        self, run_id: str, after: int, first: Sequence[Mapping[str, Any]]
    ) -> list[Mapping[str, Any]]:
        found = await self.read(run_id, after)
        if not found:
            await self.append(run_id, first)
        return found

    async def last(self, run_id: str) -> Mapping[str, Any] | None:
        stored = self._events.get(run_id)
        return stored[max(stored)] if stored else None

    async def wait(self, run_id: str, after: int, patience: float) -> None:
        if any(number > after for number in self._events.get(run_id, {})):
            return
        changed = self._changed.setdefault(run_id, asyncio.Event())
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(changed.wait(), patience)

    @contextmanager
    def follow(self, run_id: str) -> Iterator[LogWaiter]:
        yield LogWaiter(self, run_id)

    async def delete(self, run_ids: Iterable[str]) -> None:
        for run_id in run_ids:
            self._events.pop(run_id, None)


@dataclass(frozen=True)
class LogWaiter:
    """A reader's waiter that asks its log each time (`wait` checks the log itself)."""

    log: InMemoryResponseEventLog
    run_id: str

    async def wait(self, after: int, patience: float) -> None:
        """Returns None: the reader reads the log (a read here costs no round trip)."""
        await self.log.wait(self.run_id, after, patience)
