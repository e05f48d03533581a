"""A stopped worker loses its runs within a bound, on every engine (issue 29).

The worker's own process alone is stopped (SIGSTOP of its pid) for a minute in the middle of
its runs: a debugger, a process stuck in the kernel, an operator's mistake. On Hatchet this is
the hard case: the SDK's listener child keeps heartbeating to the engine, and before issue 29
the engine kept the runs on the stopped worker (and handed it new ones) for as long as it was
stopped. Now, on both engines, its runs are completed by the other worker while it is still
stopped, runs created during the stop go to the other worker, each node that finished ran
once, and the stopped worker exits 75 as it wakes.

Real deployments: a private PostgreSQL cluster, `lgos serve` and two `lgos worker` processes,
the Hatchet engine built here.
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections import Counter
from collections.abc import Iterator

import pytest

from tests.background.conftest import Deployment, is_message
from tests.background.test_conformance import topic
from tests.faults.cluster import Cluster
from tests.faults.conftest import engine_deployment
from tests.faults.test_database_and_workers import (
    DEADLINE_SECONDS,
    finished,
    step_seen,
    steps_text,
)

pytestmark = [pytest.mark.anyio, pytest.mark.postgres, pytest.mark.processes]

# How long the worker stays stopped: the fault itself, as issue 29 reproduced it.
STOP_SECONDS = 60.0
# Runs created while the worker is stopped, once its own runs were taken over.
RUNS_DURING_STOP = 3


@pytest.fixture(scope="module", params=["dbos", "hatchet"])
def deployment(request: pytest.FixtureRequest, cluster: Cluster) -> Iterator[Deployment]:
    yield from engine_deployment(request, cluster, apis=1, workers=2)


@pytest.mark.timeout(900, func_only=True)
@pytest.mark.parametrize("runs", [1, 3])
async def test_a_stopped_worker_loses_its_runs_and_gets_no_new_ones(
    deployment: Deployment, runs: int
) -> None:
    deployment.ensure_workers()
    try:
        async with asyncio.timeout(STOP_SECONDS + 3 * DEADLINE_SECONDS):
            await stopped_worker_scenario(deployment, runs)
    finally:
        await deployment.close_clients()


async def stopped_worker_scenario(deployment: Deployment, count: int) -> None:
    api = deployment.sdk(0)
    names = [topic() for _ in range(count)]
    runs = {
        name: await api.responses.create(model="gated-steps", input=name, background=True)
        for name in names
    }
    pids = {name: await step_seen(deployment, name, "step_2", "started") for name in names}
    stuck_pid = pids[names[0]]
    stuck = deployment.worker_with_pid(stuck_pid)
    stuck_runs = [name for name in names if pids[name] == stuck_pid]
    # The worker's own process alone: on Hatchet the SDK's listener child keeps running.
    os.kill(stuck_pid, signal.SIGSTOP)
    stopped_at = time.monotonic()
    later: list[str] = []
    try:
        for name in names:
            await deployment.open_gate(name)
        # Taken over while the worker is still stopped: completed by the other worker.
        for name in stuck_runs:
            done = await finished(deployment, runs[name].id)
            assert (done.status, done.output_text) == ("completed", steps_text(name)), done
            print(
                f"FIGURE {deployment.engine} runs={count} stop→completed elsewhere: "
                f"{time.monotonic() - stopped_at:.1f}s"
            )
        # New runs while it is stopped go to the live worker, and complete during the stop.
        later = [topic() for _ in range(RUNS_DURING_STOP)]
        for name in later:
            await deployment.open_gate(name)
            runs[name] = await api.responses.create(
                model="gated-steps", input=name, background=True
            )
        for name in later:
            done = await finished(deployment, runs[name].id)
            assert (done.status, done.output_text) == ("completed", steps_text(name)), done
        assert time.monotonic() - stopped_at < STOP_SECONDS, (
            "the runs waited for the stopped worker to wake"
        )
        # The fault lasts its whole length (not a wait for a condition).
        await asyncio.sleep(max(0.0, STOP_SECONDS - (time.monotonic() - stopped_at)))
    finally:
        os.kill(stuck_pid, signal.SIGCONT)

    # Woken, it learns its lease is gone and exits before writing anything.
    status = await asyncio.to_thread(stuck.process.wait, DEADLINE_SECONDS)
    assert status == 75, stuck.output()
    assert stuck.wait_for_record(is_message("worker.lease_lost"))
    for name in [*names, *later]:
        done = await finished(deployment, runs[name].id)
        steps = await deployment.steps(name)
        assert (done.status, done.output_text) == ("completed", steps_text(name)), (done, steps)
        # Each node finished exactly once, and the first one never started again.
        finishes = Counter(step for step, event, _ in steps if event == "finished")
        assert finishes == {"step_1": 1, "step_2": 1, "step_3": 1}, steps
        assert [step for step, event, _ in steps if event == "started"].count("step_1") == 1
        after_stop = {pid for step, event, pid in steps if event == "finished" and step != "step_1"}
        assert stuck_pid not in after_stop, steps
    for name in later:
        # Not one step of a run created during the stop ran on the stopped worker.
        assert stuck_pid not in {pid for _, _, pid in await deployment.steps(name)}, name
