"""A worker woken from a stop that may have cost it its lease exits before it runs another line
of its own code (the guard behind test_stopped_worker_loses_its_run_and_its_result).

The child process stops itself; the test continues it once the kernel reports it stopped. The
line after the stop prints: it must not when the lease may be lost, and must when it may not.
The child has idle threads besides its main one, as a worker has: a `SIGCONT` the kernel
delivered to one of them would let the main thread print before the handler ran.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest

from lgos.integrations.dbos import LEASE_LOST_EXIT_STATUS

CHILD = """
import os, signal, sys, threading
from lgos.integrations.postgres.wake_guard import WakeGuard

guard = WakeGuard(lambda: {lost})
# Idle threads, like a worker's pools: the kernel must not hand them the SIGCONT, or the main
# thread would run on before the handler does.
idle = threading.Event()
for _ in range(16):
    threading.Thread(target=idle.wait, daemon=True).start()
print("guarded", flush=True)
os.kill(os.getpid(), signal.SIGSTOP)
print("resumed", flush=True)
guard.stop()
"""


def run_stopped_child(lost: bool) -> tuple[int, str]:
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD.format(lost=lost)],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdout is not None
    assert child.stdout.readline() == "guarded\n"
    _, status = os.waitpid(child.pid, os.WUNTRACED)
    assert os.WIFSTOPPED(status)
    child.send_signal(signal.SIGCONT)
    output = child.stdout.read()
    return child.wait(timeout=60), output


@pytest.mark.timeout(60)
def test_a_process_that_may_have_lost_its_lease_exits_as_it_wakes() -> None:
    assert run_stopped_child(lost=True) == (LEASE_LOST_EXIT_STATUS, "")


@pytest.mark.timeout(60)
def test_a_short_stop_costs_nothing() -> None:
    assert run_stopped_child(lost=False) == (0, "resumed\n")
