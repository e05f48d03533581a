"""What this process last heard from the engine about each background run it was asked about.

On an engine whose workers log every run's end (`results_in_log`: Hatchet), a poll needs the
engine only for what the log cannot say: the job (its echo builds the Response of a run that
has not ended) and an end that only the engine knows of (a timeout, a cancel from the engine's
own tools). The job never changes, and those ends are rare, so a poll answers from the engine's
last word on the run and the log, and the engine is asked again at most every `max_age`
seconds per run, by one read at a time, in the background. Everything else a poll shows (the
run started, the run ended, a cancel through LGOS) is in the log, which every poll reads.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import OrderedDict
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from lgos.core.background import BackgroundRun

logger = logging.getLogger("lgos.background")

# Enough for every run a busy API instance is polled about at once; beyond it the oldest are
# forgotten (their next poll reads the engine, as the first poll of a run does).
DEFAULT_CAPACITY = 2048


@dataclass(slots=True)
class _Heard:
    run: BackgroundRun
    at: float  # when the engine said it (the clock of `RecentRuns`)
    reading: asyncio.Task[None] | None = None


class RecentRuns:
    """The engine's last view of each run, with when it was read; bounded, oldest out."""

    def __init__(
        self,
        max_age: float,
        capacity: int = DEFAULT_CAPACITY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.max_age = max_age
        self.capacity = capacity
        self.clock = clock
        self._heard: OrderedDict[str, _Heard] = OrderedDict()
        # The reads under way, held until they end (a forgotten run's read still ends).
        self._reads: set[asyncio.Task[None]] = set()

    def remember(self, run: BackgroundRun) -> None:
        """The engine's view of `run`, read now (on a create, a first poll, a cancel)."""
        heard = self._heard.pop(run.id, None)
        reading = heard.reading if heard is not None else None
        self._heard[run.id] = _Heard(run, self.clock(), reading)
        while len(self._heard) > self.capacity:
            self._heard.popitem(last=False)

    def forget(self, run_id: str) -> None:
        """The run ended in the log: nothing the engine says about it will be needed."""
        self._heard.pop(run_id, None)

    def get(self, run_id: str) -> BackgroundRun | None:
        heard = self._heard.get(run_id)
        return None if heard is None else heard.run

    def read_again_if_old(
        self, run_id: str, read: Callable[[], Awaitable[BackgroundRun | None]]
    ) -> None:
        """Start `read()` in the background when the view of `run_id` is older than `max_age`
        and no read of it is under way; its answer replaces the view. A failed or empty read
        (an engine away, a view that does not show the run yet) keeps the old view until the
        next `max_age`."""
        heard = self._heard.get(run_id)
        if heard is None or heard.reading is not None:
            return
        if self.clock() - heard.at < self.max_age:
            return
        heard.reading = asyncio.create_task(self._read(run_id, read), name="lgos-run-read")
        self._reads.add(heard.reading)
        heard.reading.add_done_callback(self._reads.discard)

    async def _read(self, run_id: str, read: Callable[[], Awaitable[BackgroundRun | None]]) -> None:
        run: BackgroundRun | None = None
        try:
            run = await read()
        except Exception as error:  # the next poll's view is the old one; it tries again
            logger.debug("background.run_read_failed", extra={"error.type": type(error).__name__})
        heard = self._heard.get(run_id)
        if heard is None:
            return
        heard.reading = None
        if run is not None:
            self.remember(run)
        else:
            heard.at = self.clock()
