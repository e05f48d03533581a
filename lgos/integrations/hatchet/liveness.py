"""LGOS's liveness on a Hatchet worker: a stuck worker process stops looking alive to the
engine, so the engine gives it no new runs and hands its runs to another worker.

Hatchet knows a worker by the heartbeat of its action listener, a child process the SDK spawns
next to the process that runs the tasks. Stop the worker's own process alone (SIGSTOP, a
debugger, a process stuck in the kernel) and the child keeps beating: the engine keeps the
runs on it and hands it new ones. So the worker process stamps a shared clock every
`PULSE_SECONDS` (`Pulse`, a thread of its own, so a busy event loop is still progress), and the
child watches it (`watch_parent`): once the stamp is `STALL_SECONDS` old, the child stops
itself, and with it the engine heartbeat. The engine then stops assigning to the worker
within 5 seconds and reassigns its tasks (same run ids) 30 seconds after the last beat.

The worker process continues a child that stopped itself as soon as it runs again and its
lease still holds (a stall shorter than the lease: nothing was lost). Woken after a longer
stop, it exits on its lease (`WakeGuard`) and the kernel ends the child with it
(`PR_SET_PDEATHSIG`). The run leases the stuck process held are freed by the reaper of a live
worker (`WorkerLease.fence_expired`), so the worker a run is reassigned to can take them.
"""

from __future__ import annotations

import ctypes
import logging
import multiprocessing
import os
import signal
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

logger = logging.getLogger("lgos.background.hatchet")

PULSE_SECONDS = 0.5
# Well above a pulse on a loaded machine, and well below the engine's 5 s "no new runs" and
# 30 s "reassign" marks, so a stopped worker is seen as one within about 8 s.
STALL_SECONDS = 3.0
_PR_SET_PDEATHSIG = 1
# The shared array's slots: the worker's last stamp, and the pid of the listener watching it.
_STAMP, _LISTENER_PID = 0, 1


class Pulse:
    """The worker process's side: stamp the shared clock, continue a listener that stopped
    itself while this process was stalled (unless `lease_may_be_lost`: then this process is
    about to exit, and the listener goes with it)."""

    def __init__(self, lease_may_be_lost: Callable[[], bool]) -> None:
        self._lease_may_be_lost = lease_may_be_lost
        # Spawn's context, as the SDK's listener process is started with.
        context = multiprocessing.get_context("spawn")
        # No lock: a process stopped while holding it would block the child's read for good.
        # (Each slot is one aligned 8-byte word, written whole.)
        self.shared: Any = context.Array("d", [time.monotonic(), 0.0], lock=False)
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="lgos-pulse", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stopped.set()

    def _beat(self) -> None:
        while not self._stopped.wait(PULSE_SECONDS):
            # CLOCK_MONOTONIC is the whole system's: the child reads the same clock.
            self.shared[_STAMP] = time.monotonic()
            pid = int(self.shared[_LISTENER_PID])
            if pid and _stopped(pid) and not self._lease_may_be_lost():
                logger.info("worker.listener_continued", extra={"listener_pid": pid})
                os.kill(pid, signal.SIGCONT)


def watch_parent(shared: Any, target: Callable[..., None], *args: Any) -> None:
    """The listener process's side (the SDK's listener `target`, started by spawn): die with
    the worker process, and stop this process while the worker's stamp is stale."""
    parent = os.getppid()
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it died before the line above
        os._exit(1)
    shared[_LISTENER_PID] = float(os.getpid())
    threading.Thread(target=_watch, args=(shared,), name="lgos-parent-watch", daemon=True).start()
    target(*args)


def _watch(shared: Any) -> None:
    while True:
        time.sleep(PULSE_SECONDS)
        silent = time.monotonic() - shared[_STAMP]
        if silent > STALL_SECONDS:
            # Plain stderr: this process has no logging of LGOS's.
            print(
                f"lgos: worker process silent for {silent:.1f}s: "
                "stopping its Hatchet listener (and heartbeat)",
                file=sys.stderr,
                flush=True,
            )
            os.kill(os.getpid(), signal.SIGSTOP)


def _stopped(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            # "pid (comm) state ...": comm may hold spaces and parentheses.
            return stat.read().rpartition(")")[2].split()[0] in ("T", "t")
    except (OSError, IndexError):
        return False
