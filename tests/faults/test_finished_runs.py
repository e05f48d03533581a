"""Finished means finished, on every engine (issue 29): an execution of a background run that
an earlier execution already finished (a retry, a reassignment, a recovery) returns that
Response again and runs no node; one whose checkpoint is gone fails instead of starting over.

Before issue 29, on Hatchet, a worker whose whole process group was frozen lost its run to
another worker, which waited for the run's lease (held by the frozen worker's session); the
frozen worker woke, finished and deleted the checkpoint, and the replacement then took the
free lease, found no checkpoint and ran every node again, side effects and all.

The first tests run the executor every worker runs, in this process, on PostgreSQL; the last
one freezes a worker's process group in real deployments of DBOS and Hatchet (a private
PostgreSQL cluster, `lgos serve` and `lgos worker` processes, the engine built here).
"""

from __future__ import annotations

import asyncio
import os
import signal
import time
from collections import Counter
from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from langgraph.graph import MessagesState
from langgraph.pregel import Pregel

from lgos.background.executor import RUN_LOST_MESSAGE, DurableRuns, JobExecutor
from lgos.core.background import BackgroundJob
from lgos.core.registry import GraphConfig, GraphFeature, GraphRegistry
from lgos.integrations.postgres import open_postgres
from lgos.run.interrupts import checkpoint_thread_id
from lgos.service import background, responses
from lgos.wire import ids, responses_decoder
from tests.background.conftest import Deployment
from tests.background.test_conformance import topic
from tests.faults.cluster import Cluster
from tests.faults.conftest import engine_deployment
from tests.faults.test_database_and_workers import (
    DEADLINE_SECONDS,
    finished,
    step_seen,
    steps_text,
)
from tests.support.graphs import linear_graph
from tests.support.postgres import temporary_database

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

NODES = ("first", "second", "third")


class CountingGraph:
    """Three nodes that count their executions; `second` waits for `release` when it is set."""

    def __init__(self) -> None:
        self.executions: Counter[str] = Counter()
        self.release: asyncio.Event | None = None
        self.second_started = asyncio.Event()

    def graph(self) -> Pregel:
        def node(name: str) -> Any:
            async def run(state: MessagesState) -> dict[str, Any]:
                self.executions[name] += 1
                if name == "second":
                    self.second_started.set()
                    if self.release is not None:
                        await self.release.wait()
                if name == "third":
                    return {"messages": [("ai", "counted")]}
                return {}

            return run

        return linear_graph({name: node(name) for name in NODES})


@pytest.fixture
async def postgres() -> AsyncIterator[Any]:
    with temporary_database("lgos_test_finished") as uri:
        async with open_postgres(uri, pool_size=6) as opened:
            yield opened


def worker(postgres: Any, counting: CountingGraph) -> JobExecutor:
    """What `lgos worker` runs jobs with, on PostgreSQL."""
    registry = GraphRegistry(
        graphs={
            "counting": GraphConfig(
                graph=counting.graph(),
                description="Counts its nodes.",
                features=frozenset({GraphFeature.BACKGROUND}),
            )
        },
        run_coordinator=postgres.run_coordinator,
    )
    return JobExecutor(
        registry=registry,
        durable=DurableRuns(postgres.checkpointer, postgres.run_coordinator),
        events=postgres.events,
    )


def job_for(executor: JobExecutor, *, stream: bool) -> BackgroundJob:
    body = {"model": "counting", "input": "count", "background": True, "stream": stream}
    decoded = responses_decoder.decode(body)
    prepared = responses.prepare(executor.registry, decoded)
    job = background.new_job(prepared, decoded, owner_scope="default")
    return BackgroundJob.model_validate_json(job.model_dump_json())


@pytest.mark.parametrize("stream", [False, True])
async def test_a_finished_run_executed_again_returns_its_response_and_runs_no_node(
    postgres: Any, stream: bool
) -> None:
    counting = CountingGraph()
    executor = worker(postgres, counting)
    job, engine_run_id = job_for(executor, stream=stream), ids.new_hex()
    first = await executor(job, engine_run_id)
    assert first["status"] == "completed", first
    # The engine runs it again: its worker died before the engine recorded the result, or a
    # replaced worker woke and finished it while its replacement waited for the lease.
    again = await executor(job, engine_run_id)
    assert again == first
    assert counting.executions == dict.fromkeys(NODES, 1)


async def test_a_started_run_whose_checkpoint_is_gone_fails_instead_of_starting_over(
    postgres: Any,
) -> None:
    counting = CountingGraph()
    counting.release = asyncio.Event()
    executor = worker(postgres, counting)
    job, engine_run_id = job_for(executor, stream=False), ids.new_hex()
    # An execution that started, got as far as the second node, and went away.
    started = asyncio.create_task(executor(job, engine_run_id))
    await asyncio.wait_for(counting.second_started.wait(), DEADLINE_SECONDS)
    started.cancel()
    with pytest.raises(asyncio.CancelledError):
        await started
    # Its checkpoint goes too (expired, say, or deleted by a cleanup).
    thread = checkpoint_thread_id(job.owner_scope, job.model, job.run_id)
    await postgres.checkpointer.adelete_thread(thread)
    counting.release.set()

    lost = await executor(job, engine_run_id)
    assert lost["status"] == "failed"
    assert lost["error"] == {"code": "server_error", "message": RUN_LOST_MESSAGE}
    # The first node had finished: it did not run again.
    assert counting.executions == {"first": 1, "second": 1}
    # That end is the run's for good: a later execution returns it as it is.
    assert await executor(job, engine_run_id) == lost


# A worker's whole process group frozen mid-run (a paused VM or container), in real deployments.

FROZEN_RUNS = 3
# How long the group stays frozen: the fault itself (a paused VM or container), as issue 29
# reproduced it. Long enough for the replacement's retries to back off (15 s, then 30 s)
# while they wait for the lease, which is when the old code ran every node again.
FREEZE_SECONDS = 60.0


@pytest.fixture(scope="module", params=["dbos", "hatchet"])
def deployment(request: pytest.FixtureRequest, cluster: Cluster) -> Iterator[Deployment]:
    yield from engine_deployment(request, cluster, apis=1, workers=2, worker_groups=True)


@pytest.mark.processes
@pytest.mark.timeout(900, func_only=True)
async def test_a_frozen_worker_group_costs_no_node_a_second_execution(
    deployment: Deployment,
) -> None:
    deployment.ensure_workers()
    try:
        async with asyncio.timeout(3 * DEADLINE_SECONDS):
            await frozen_group_scenario(deployment)
    finally:
        await deployment.close_clients()


def engine_run_id(response_id: str) -> str:
    parsed = ids.parse_run_response_id(response_id)
    assert parsed is not None, response_id
    return parsed.nonce


async def frozen_group_scenario(deployment: Deployment) -> None:
    api = deployment.sdk(0)
    names = [topic() for _ in range(FROZEN_RUNS)]
    runs = {
        name: await api.responses.create(model="gated-steps", input=name, background=True)
        for name in names
    }
    pids = {name: await step_seen(deployment, name, "step_2", "started") for name in names}
    frozen_pid = pids[names[0]]
    frozen = deployment.worker_with_pid(frozen_pid)
    frozen_runs = [name for name in names if pids[name] == frozen_pid]
    os.killpg(frozen_pid, signal.SIGSTOP)
    frozen_at = time.monotonic()
    try:
        for name in names:
            await deployment.open_gate(name)
        # LGOS's lease: another worker ends the frozen one's sessions (and its run leases);
        # DBOS re-enqueues its runs, Hatchet reassigns them as the frozen listener's heartbeat
        # stops; either way another worker continues them from their checkpoints while the
        # frozen one is still frozen.
        for name in frozen_runs:
            done = await finished(deployment, runs[name].id)
            assert (done.status, done.output_text) == ("completed", steps_text(name))
        # The fault lasts its whole length, whatever happened meanwhile (not a wait for a
        # condition: the frozen worker must wake long after it lost its runs, as in the field).
        await asyncio.sleep(max(0.0, FREEZE_SECONDS - (time.monotonic() - frozen_at)))
    finally:
        os.killpg(frozen_pid, signal.SIGCONT)

    for name in names:
        done = await finished(deployment, runs[name].id)
        steps = await deployment.steps(name)
        assert (done.status, done.output_text) == ("completed", steps_text(name)), (
            done.error,
            steps,
            name in frozen_runs,
            [worker.output(40) for worker in deployment.workers.values()],
        )
        finishes = Counter(step for step, event, _ in steps if event == "finished")
        # Each node finished exactly once, and the first one never started again.
        assert finishes == {"step_1": 1, "step_2": 1, "step_3": 1}, steps
        assert [step for step, event, _ in steps if event == "started"].count("step_1") == 1
        # One result, the same on every read.
        again = await deployment.sdk(0).responses.retrieve(runs[name].id)
        assert (again.status, again.output_text) == (done.status, done.output_text)
    # Woken, it learns its lease is gone and exits before writing anything.
    status = await asyncio.to_thread(frozen.process.wait, DEADLINE_SECONDS)
    assert status == 75, frozen.output()
    for name in frozen_runs:
        steps = await deployment.steps(name)
        after_freeze = {
            pid for step, event, pid in steps if event == "finished" and step != "step_1"
        }
        assert frozen_pid not in after_freeze, steps
