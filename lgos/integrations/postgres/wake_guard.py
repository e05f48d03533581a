"""Exiting the worker process on wake from a stop that may have cost it its lease."""

from __future__ import annotations

import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from lgos.integrations.postgres.liveness import lease_lost


class WakeGuard:
    """Exits the process when it wakes from a stop (SIGSTOP, a frozen VM) that may have cost it
    its lease, before its event loop resumes a graph whose run another worker now owns.

    Two ways to notice the stop, for the two ways to be stopped: `SIGCONT`, whose handler
    runs on the main thread (the event loop's) before any more of its Python code; and, for a
    freeze that sends no signal, a thread that sees the clock jump between its ticks
    (CLOCK_MONOTONIC keeps counting while the process is stopped). Either one then asks whether
    the lease may have expired meanwhile (`lease_may_be_lost`): a stop shorter than that costs
    nothing. The heartbeat would find out too, but only at its next beat.

    "Before any more of its Python code" needs the kernel to deliver `SIGCONT` to the main
    thread: delivered to another thread, the handler waits until that thread is scheduled
    while the main thread already runs on. So every thread started while the guard is up blocks
    `SIGCONT` (`block_sigcont_in_new_threads`); the main thread is then the only one that
    takes it, as it comes out of the stop. A thread started before the guard could still take
    it; the worker starts the guard before DBOS, its pools and the heartbeat.
    """

    TICK_SECONDS = 0.5

    def __init__(self, lease_may_be_lost: Callable[[], bool], executor_id: str = "") -> None:
        self._lease_may_be_lost = lease_may_be_lost
        # Named in the `worker.lease_lost` record, as the heartbeat's names it.
        self._executor_id = executor_id
        self._stopped = threading.Event()
        self._previous_handler: Any = None
        self._previous_thread_profile: Any = None
        if threading.current_thread() is threading.main_thread():
            self._previous_handler = signal.signal(signal.SIGCONT, self._on_continue)
            self._previous_thread_profile = block_sigcont_in_new_threads()
        self._thread = threading.Thread(target=self._watch, name="lgos-wake-guard", daemon=True)
        self._thread.start()

    def _check(self, how: str) -> None:
        if self._lease_may_be_lost():
            lease_lost(
                self._executor_id,
                f"this process was stopped ({how}) for long enough to lose its lease",
            )

    def _on_continue(self, signum: int, frame: object) -> None:
        self._check("SIGCONT")

    def _watch(self) -> None:
        last = time.monotonic()
        while not self._stopped.wait(self.TICK_SECONDS):
            now = time.monotonic()
            if now - last > 4 * self.TICK_SECONDS:
                self._check("the clock jumped")
            last = now

    def stop(self) -> None:
        self._stopped.set()
        if self._previous_handler is not None:
            threading.setprofile(self._previous_thread_profile)
            signal.signal(signal.SIGCONT, self._previous_handler)


def block_sigcont_in_new_threads() -> Any:
    """Make every thread the `threading` module starts from now on block `SIGCONT` as its
    first act; return the thread profile function this replaces.

    Python has no hook for a thread's start but its profile function, which a new thread
    installs before its first call: ours blocks the signal, then hands the thread back to the
    previous profile function, if any (a profiler keeps working).
    """
    previous = threading.getprofile()

    def block_sigcont(frame: Any, event: Any, arg: Any) -> Any:
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCONT})
        sys.setprofile(previous)
        return previous(frame, event, arg) if previous is not None else None

    threading.setprofile(block_sigcont)
    return previous
