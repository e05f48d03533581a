"""The durable paths against their floors, measured side by side in one run (not a test).

    just bench-durable [--quick] [--engines memory,dbos,hatchet] [--out DIR]

Everything runs on this machine's PostgreSQL, each deployment on a throwaway database of its
own, as real processes on loopback (see `benchmarks.background` for the deployments):

Floors (no LGOS):
- engine floor: DBOS alone (a `DBOSClient` enqueues a no-op workflow on a queue two floor
  workers serve, with LGOS's slots and queue polling interval, and waits for its result,
  polling every 10 ms); Hatchet alone (the SDK triggers a no-op task two floor workers serve,
  on the same engine as LGOS's, and waits for its result). One at a time (latency) and a
  burst (runs/s).
- engine + graph floor: the same, each job running `background-mock` on LangGraph's
  PostgreSQL saver with `durability="sync"` (a DBOS step; a Hatchet task): the engine and the
  graph with nothing of LGOS, as a user of the engine would write it.
- checkpoint floor: LangGraph alone running `background-mock` (the demo graph itself) on
  `AsyncPostgresSaver` with `durability="sync"`, in this process.
- review floor: LangGraph alone running `background-interrupt` on `AsyncPostgresSaver` to its
  pause, then resuming it with the answer (`Command(resume=...)`).

LGOS (official SDK against the API, polling every 10 ms where the API is polled):
- background `background-mock` create → completed, one at a time and in a burst, per engine;
- the review round trip on `background-interrupt` (create → paused with its `lgos_interrupt`
  call → answer → final answer) with PostgreSQL persistence, foreground (in-memory engine
  server) and background (DBOS);
- stream tail: a client tails a streamed DBOS background Response while this process appends
  events to its log the way a worker does; the time from the append to the client receiving
  the event.

Every pass runs every measurement once, one after the other, so each ratio pairs figures
measured a few seconds apart; the report gives medians over passes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import statistics
import subprocess
import sys
import time
import uuid
from collections.abc import Awaitable, Callable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import psutil
from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from openai import AsyncOpenAI
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from benchmarks.background import (
    _RUNNING,
    REGISTRY,
    Process,
    create,
    database,
    engine_settings,
    environment,
    stop_children_on_sigterm,
    until_completed,
)
from benchmarks.durable_floor import CHECKPOINT_URI_VARIABLE, graph_config

REPO = Path(__file__).resolve().parent.parent
PYTHON = sys.executable
POLL_SECONDS = 0.01
BURST_POLL_SECONDS = 0.25
IN_FLIGHT = 16
NO_DELAY = {"lgos_settings": '{"delay_seconds": 0}'}
# The tailed run sleeps this long (the graph's maximum) while ticks are appended to its log.
TAIL_RUN_DELAY = {"lgos_settings": '{"delay_seconds": 300}'}
TICK_BASE = 10_000  # sequence numbers of the appended ticks: above anything the worker writes


@dataclass(frozen=True)
class Counts:
    passes: int
    runs: int  # one-at-a-time runs per latency batch
    burst: int  # runs per burst
    ticks: int  # events appended per stream-tail batch


MODES = {
    "full": Counts(passes=5, runs=20, burst=100, ticks=30),
    "quick": Counts(passes=3, runs=8, burst=40, ticks=15),
    "smoke": Counts(passes=1, runs=2, burst=8, ticks=3),
}


@dataclass
class Results:
    # measurement name → one figure per pass (ms for latencies, runs/s for bursts)
    passes: dict[str, list[float]] = field(default_factory=dict)
    # burst name → CPU ms per run of the processes serving it, one figure per pass
    cpu: dict[str, list[float]] = field(default_factory=dict)
    # every stream-tail sample (ms), over all passes
    tail_samples: list[float] = field(default_factory=list)

    def add(self, name: str, value: float) -> None:
        self.passes.setdefault(name, []).append(value)

    def median(self, name: str) -> float | None:
        values = self.passes.get(name)
        return statistics.median(values) if values else None


# --- floors -------------------------------------------------------------------------------


def _ms(seconds: list[float]) -> float:
    return statistics.median(seconds) * 1000


class DBOSFloor:
    def __init__(self, url: str) -> None:
        from dbos import DBOSClient

        self.client = DBOSClient(system_database_url=url, application_name="lgos-bench-floor")

    def close(self) -> None:
        self.client.destroy()

    async def one(self, index: int, poll: float, *, graph: bool = False) -> None:
        from dbos import WorkflowSerializationFormat

        from benchmarks.durable_floor import (
            DBOS_GRAPH_WORKFLOW,
            DBOS_QUEUE,
            DBOS_VERSION,
            DBOS_WORKFLOW,
        )

        handle = await self.client.enqueue_async(
            {
                "workflow_name": DBOS_GRAPH_WORKFLOW if graph else DBOS_WORKFLOW,
                "queue_name": DBOS_QUEUE,
                "app_version": DBOS_VERSION,
                "workflow_id": uuid.uuid4().hex,
                "serialization_type": WorkflowSerializationFormat.PORTABLE,
            },
            index,
        )
        await handle.get_result(polling_interval_sec=poll)

    async def latency(self, runs: int, *, graph: bool = False) -> float:
        seconds = []
        for index in range(runs):
            started = time.perf_counter()
            await self.one(index, POLL_SECONDS, graph=graph)
            seconds.append(time.perf_counter() - started)
        return _ms(seconds)

    async def burst(self, burst: int, *, graph: bool = False) -> float:
        return await _burst(burst, lambda index: self.one(index, BURST_POLL_SECONDS, graph=graph))


class HatchetFloor:
    def __init__(self) -> None:
        from hatchet_sdk import Hatchet

        from benchmarks.durable_floor import hatchet_tasks

        self.hatchet = Hatchet()
        self.task, self.graph_task = hatchet_tasks(self.hatchet)

    async def latency(self, runs: int, *, graph: bool = False) -> float:
        task = self.graph_task if graph else self.task
        seconds = []
        for _ in range(runs):
            started = time.perf_counter()
            await task.aio_run()
            seconds.append(time.perf_counter() - started)
        return _ms(seconds)

    async def latency_polled(self, runs: int) -> float:
        """Trigger, then read the run over REST every 10 ms until it shows completed: how
        LGOS's API learns that a run finished (any instance, no subscription)."""
        from hatchet_sdk.clients.rest.exceptions import NotFoundException

        seconds = []
        for _ in range(runs):
            started = time.perf_counter()
            ref = await self.task.aio_run(wait_for_result=False)
            while True:
                try:
                    status = await self.hatchet.runs.aio_get_status(ref.workflow_run_id)
                except NotFoundException:
                    status = None
                if getattr(status, "value", status) == "COMPLETED":
                    break
                await asyncio.sleep(POLL_SECONDS)
            seconds.append(time.perf_counter() - started)
        return _ms(seconds)

    async def burst(self, burst: int, *, graph: bool = False) -> float:
        task = self.graph_task if graph else self.task
        in_flight = asyncio.Semaphore(IN_FLIGHT)

        async def one(index: int) -> None:
            async with in_flight:
                ref = await task.aio_run(wait_for_result=False)
            await ref.aio_result()

        return await _burst(burst, one)


async def _burst(burst: int, one: Callable[[int], Awaitable[None]]) -> float:
    started = time.perf_counter()
    await asyncio.gather(*(one(index) for index in range(burst)))
    return burst / (time.perf_counter() - started)


class LangGraphFloors:
    """The checkpoint and review floors: the demo graphs on LangGraph's PostgreSQL saver."""

    def __init__(self, checkpointer: Any) -> None:
        from demo.graphs.review import background_interrupt_graph, background_mock_graph

        self.background = background_mock_graph().copy({"checkpointer": checkpointer})
        self.review = background_interrupt_graph(checkpointer)

    async def checkpoint(self, runs: int) -> float:
        from langchain_core.messages import HumanMessage

        seconds = []
        for index in range(runs):
            config = graph_config("background-mock")
            started = time.perf_counter()
            await self.background.ainvoke(
                {"messages": [HumanMessage(f"latency {index}")]}, config, durability="sync"
            )
            seconds.append(time.perf_counter() - started)
        return _ms(seconds)

    async def review_round_trip(self, runs: int) -> float:
        from langchain_core.messages import HumanMessage
        from langgraph.types import Command

        seconds = []
        for index in range(runs):
            config = graph_config("background-interrupt")
            started = time.perf_counter()
            paused = await self.review.ainvoke(
                {"messages": [HumanMessage(f"review {index}")]}, config
            )
            assert paused.get("__interrupt__"), "the review graph did not pause"
            final = await self.review.ainvoke(Command(resume="approve"), config)
            assert final["messages"][-1].content, "the review graph gave no answer"
            seconds.append(time.perf_counter() - started)
        return _ms(seconds)


# --- LGOS ---------------------------------------------------------------------------------


async def lgos_latency(client: AsyncOpenAI, runs: int) -> float:
    seconds = []
    for index in range(runs):
        started = time.perf_counter()
        await until_completed(client, await create(client, f"latency {index}"))
        seconds.append(time.perf_counter() - started)
    return _ms(seconds)


async def lgos_burst(client: AsyncOpenAI, burst: int) -> float:
    in_flight = asyncio.Semaphore(IN_FLIGHT)

    async def one(index: int) -> None:
        async with in_flight:
            response_id = await create(client, f"burst {index}")
        await until_completed(client, response_id, poll=BURST_POLL_SECONDS)

    return await _burst(burst, one)


async def _answered(client: AsyncOpenAI, response: Any, background: bool) -> Any:
    if background:
        await until_completed(client, response.id)
        response = await client.responses.retrieve(response.id)
    return response


async def lgos_review(
    client: AsyncOpenAI, runs: int, *, background: bool, store: bool = True
) -> float:
    seconds = []
    for index in range(runs):
        started = time.perf_counter()
        paused = await _answered(
            client,
            await client.responses.create(
                model="background-interrupt",
                input=f"review {index}",
                metadata=NO_DELAY,
                background=background,
                store=store,
            ),
            background,
        )
        calls = [item for item in paused.output if item.type == "function_call"]
        assert calls, "the review graph did not pause"
        assert calls[0].name == "lgos_interrupt"
        final = await _answered(
            client,
            await client.responses.create(
                model="background-interrupt",
                previous_response_id=paused.id,
                input=[
                    {
                        "type": "function_call_output",
                        "call_id": calls[0].call_id,
                        "output": "approve",
                    }
                ],
                metadata=NO_DELAY,
                background=background,
                store=store,
            ),
            background,
        )
        assert final.status == "completed", final.status
        assert final.output_text, "no final answer"
        seconds.append(time.perf_counter() - started)
    return _ms(seconds)


async def stream_tail(base_url: str, events: Any, ticks: int) -> list[float]:
    """Tail a streamed background run; append `ticks` events to its log one at a time (as its
    worker would) and time each from the append call to the client reading it."""
    from lgos.wire import ids

    received: dict[int, float] = {}
    arrived = asyncio.Condition()
    idle = asyncio.Event()  # the worker wrote its events before its long sleep
    response_id: list[str] = []

    async def read(http: httpx.AsyncClient) -> None:
        body = {
            "model": "background-mock",
            "input": "tail",
            "background": True,
            "stream": True,
            "metadata": TAIL_RUN_DELAY,
        }
        async with http.stream("POST", f"{base_url}/v1/responses", json=body) as stream:
            async for line in stream.aiter_lines():
                if not line.startswith("data: "):
                    continue
                event = json.loads(line[6:])
                now = time.perf_counter()
                if event["type"] == "response.created":
                    response_id.append(event["response"]["id"])
                if event["type"] == "response.output_item.done":
                    idle.set()  # the commentary ("Preparing the report") is all written
                async with arrived:
                    received[int(event["sequence_number"])] = now
                    arrived.notify_all()

    samples = []
    async with httpx.AsyncClient(timeout=httpx.Timeout(30, read=600)) as http:
        reader = asyncio.create_task(read(http))
        try:
            await asyncio.wait_for(idle.wait(), 120)
            parsed = ids.parse_run_response_id(response_id[0])
            assert parsed is not None
            for tick in range(ticks):
                number = TICK_BASE + tick
                # Idle between ticks, so the tail is waiting when each event lands.
                await asyncio.sleep(random.uniform(0.03, 0.06))
                started = time.perf_counter()
                await events.append(
                    parsed.nonce, [{"type": "lgos_bench.tick", "sequence_number": number}]
                )
                async with arrived:
                    await asyncio.wait_for(arrived.wait_for(lambda n=number: n in received), 10)
                samples.append((received[number] - started) * 1000)
            await http.post(f"{base_url}/v1/responses/{response_id[0]}/cancel")
            await asyncio.wait_for(reader, 60)
        finally:
            reader.cancel()
    return samples


# --- the run ------------------------------------------------------------------------------


@contextmanager
def started(processes: list[Process], ready: str) -> Iterator[list[Process]]:
    try:
        for process in processes:
            process.wait_for(ready, timeout=300)
        yield processes
    finally:
        for process in processes:
            process.stop()


@dataclass
class Deployment:
    engine: str
    base_url: str
    uri: str
    processes: list[Process]


def cpu_seconds(processes: list[Process]) -> float:
    """User + system CPU of these processes and their children (Hatchet's worker forks)."""
    total = 0.0
    for process in processes:
        try:
            root = psutil.Process(process.popen.pid)
            for one in (root, *root.children(recursive=True)):
                times = one.cpu_times()
                total += times.user + times.system
        except psutil.NoSuchProcess:
            continue
    return total


@contextmanager
def lgos_deployment(
    engine: str, stack: ExitStack, settings: dict[str, str]
) -> Iterator[Deployment]:
    uri = stack.enter_context(database())
    env = environment(
        LGOS_BACKGROUND=engine,
        LGOS_POSTGRES_URI=uri,
        LGOS_INTERRUPT_SWEEP_INTERVAL_MINUTES="0",
        **settings,
    )
    api = Process(["serve", REGISTRY, "--port", "0"], env)
    workers = []
    if engine != "memory":
        workers = [
            Process(["worker", REGISTRY], {**env, "LGOS_WORKER_ID": f"bench-{engine}-{index}"})
            for index in range(2)
        ]
    try:
        base_url = api.wait_for(_RUNNING.pattern, timeout=300)
        with started(workers, r'"message": "worker\.started"'):
            yield Deployment(engine, base_url, uri, [api, *workers])
    finally:
        api.stop()


def print_server_errors(deployments: dict[str, Deployment]) -> None:
    """A failed step shows what the servers logged as errors (their output is kept, not
    printed), so a 5xx seen by the client comes with the server's own record of it."""
    for deployment in deployments.values():
        for index, process in enumerate(deployment.processes):
            errors = [line for line in process.lines if '"level": "error"' in line]
            for line in errors[-5:]:
                print(f"{deployment.engine} process {index}: {line.rstrip()}", file=sys.stderr)


def floor_workers(engine: str, env: dict[str, str], *args: str) -> list[Process]:
    return [
        Process(["-m", "benchmarks.durable_floor", engine, *args, f"floor-{index}"], env, PYTHON)
        for index in range(2)
    ]


async def measure(
    counts: Counts,
    deployments: dict[str, Deployment],
    dbos_floor: DBOSFloor | None,
    hatchet_floor: HatchetFloor | None,
    floors_served: dict[str, list[Process]],
) -> Results:
    from lgos.integrations.postgres import open_postgres

    results = Results()
    clients = {
        name: AsyncOpenAI(base_url=f"{d.base_url}/v1", api_key="bench", max_retries=0)
        for name, d in deployments.items()
    }
    # The floors' saver on a plain pool, as LangGraph documents it (LGOS's pool checks each
    # connection it hands out; the floor does not).
    async with (
        AsyncConnectionPool(
            deployments["memory"].uri,
            min_size=4,
            max_size=4,
            kwargs={"autocommit": True, "row_factory": dict_row, "prepare_threshold": 0},
            open=False,
        ) as floor_pool,
        open_postgres(deployments["dbos"].uri, pool_size=2) as dbos_db,
    ):
        floor_saver = AsyncPostgresSaver(floor_pool)
        await floor_saver.setup()
        floors = LangGraphFloors(floor_saver)
        steps: list[tuple[str, Callable[[], Awaitable[float]]]] = []
        # burst name → the processes whose CPU it is charged
        served: dict[str, list[Process]] = {}
        if dbos_floor is not None:
            steps.append(("dbos engine floor", lambda: dbos_floor.latency(counts.runs)))
            steps.append(
                ("dbos engine + graph floor", lambda: dbos_floor.latency(counts.runs, graph=True))
            )
        if hatchet_floor is not None:
            steps.append(("hatchet engine floor", lambda: hatchet_floor.latency(counts.runs)))
            steps.append(
                (
                    "hatchet engine + graph floor",
                    lambda: hatchet_floor.latency(counts.runs, graph=True),
                )
            )
            steps.append(
                ("hatchet floor, REST polled", lambda: hatchet_floor.latency_polled(counts.runs))
            )
        steps += [
            ("checkpoint floor", lambda: floors.checkpoint(counts.runs)),
            ("review floor", lambda: floors.review_round_trip(counts.runs)),
        ]
        for name, client in clients.items():
            steps.append((f"lgos {name}", lambda c=client: lgos_latency(c, counts.runs)))
        steps.append(
            (
                "lgos review foreground",
                lambda: lgos_review(clients["memory"], counts.runs, background=False),
            )
        )
        # What the stored Responses cost the round trip: the same without them (a pause is
        # answered through the run its Response id names, stored or not).
        steps.append(
            (
                "lgos review foreground, store=false",
                lambda: lgos_review(clients["memory"], counts.runs, background=False, store=False),
            )
        )
        steps.append(
            (
                "lgos review background dbos",
                lambda: lgos_review(clients["dbos"], counts.runs, background=True),
            )
        )

        async def tail() -> float:
            samples = await stream_tail(deployments["dbos"].base_url, dbos_db.events, counts.ticks)
            results.tail_samples.extend(samples)
            return statistics.median(samples)

        steps.append(("lgos stream tail dbos", tail))
        if dbos_floor is not None:
            steps.append(("dbos engine floor burst", lambda: dbos_floor.burst(counts.burst)))
            steps.append(
                (
                    "dbos engine + graph floor burst",
                    lambda: dbos_floor.burst(counts.burst, graph=True),
                )
            )
            served["dbos engine floor burst"] = floors_served["dbos"]
            served["dbos engine + graph floor burst"] = floors_served["dbos"]
        if hatchet_floor is not None:
            steps.append(("hatchet engine floor burst", lambda: hatchet_floor.burst(counts.burst)))
            steps.append(
                (
                    "hatchet engine + graph floor burst",
                    lambda: hatchet_floor.burst(counts.burst, graph=True),
                )
            )
            served["hatchet engine floor burst"] = floors_served["hatchet"]
            served["hatchet engine + graph floor burst"] = floors_served["hatchet"]
        for name, client in clients.items():
            steps.append((f"lgos {name} burst", lambda c=client: lgos_burst(c, counts.burst)))
            served[f"lgos {name} burst"] = deployments[name].processes

        print("warm-up", flush=True)
        for _, step in steps:
            await step()
        for number in range(1, counts.passes + 1):
            for name, step in steps:
                before = cpu_seconds(served.get(name, []))
                own_before = time.process_time()
                try:
                    value = await step()
                except Exception:
                    print_server_errors(deployments)
                    raise
                results.add(name, value)
                if name in served:
                    used = (cpu_seconds(served[name]) - before) * 1000 / counts.burst
                    results.cpu.setdefault(name, []).append(used)
                elif name == "checkpoint floor":
                    # What the graph run alone costs, one at a time in this process: the part
                    # of every LGOS run's CPU that no engine or server can take away.
                    used = (time.process_time() - own_before) * 1000 / counts.runs
                    results.cpu.setdefault(name, []).append(used)
                print(f"pass {number} {name}: {value:.1f}", flush=True)
    for client in clients.values():
        await client.close()
    return results


# --- the report ---------------------------------------------------------------------------


def _paired(results: Results, numerator: str, *floor: tuple[float, str]) -> float | None:
    """The median over passes of numerator / sum(weight × floor), pass by pass."""
    top = results.passes.get(numerator)
    parts = [(weight, results.passes.get(name)) for weight, name in floor]
    if not top or any(not values for _, values in parts):
        return None
    ratios = [
        value / sum(weight * values[index] for weight, values in parts)  # type: ignore[index]
        for index, value in enumerate(top)
    ]
    return statistics.median(ratios)


@dataclass(frozen=True)
class Goal:
    name: str
    ratio: float | None
    limit: float
    at_most: bool  # True: ratio ≤ limit passes; False: ratio ≥ limit passes
    unit: str = "×"

    @property
    def met(self) -> bool | None:
        if self.ratio is None:
            return None
        return self.ratio <= self.limit if self.at_most else self.ratio >= self.limit

    def row(self) -> str:
        sign = "≤" if self.at_most else "≥"
        shown = "—" if self.ratio is None else f"{self.ratio:.2f}{self.unit}"
        verdict = {True: "pass", False: "**miss**", None: "—"}[self.met]
        return f"| {self.name} | {sign} {self.limit:g}{self.unit} | {shown} | {verdict} |"


def goals(results: Results) -> list[Goal]:
    found = [
        Goal(
            f"{engine}: create→completed ÷ (engine floor + checkpoint floor)",
            _paired(
                results, f"lgos {engine}", (1, f"{engine} engine floor"), (1, "checkpoint floor")
            ),
            1.5,
            True,
        )
        for engine in ("dbos", "hatchet")
    ]
    found.append(
        Goal(
            "(not a goal) hatchet: create→completed ÷ (REST-polled floor + checkpoint floor)",
            _paired(
                results,
                "lgos hatchet",
                (1, "hatchet floor, REST polled"),
                (1, "checkpoint floor"),
            ),
            1.5,
            True,
        )
    )
    found += [
        Goal(
            f"{engine}: runs/s ÷ engine floor runs/s",
            _paired(results, f"lgos {engine} burst", (1, f"{engine} engine floor burst")),
            0.7,
            False,
        )
        for engine in ("dbos", "hatchet")
    ]
    # Not the goals: LGOS against the engine running the same graph itself, which
    # says what LGOS adds to a background run, apart from what the graph costs.
    found += [
        Goal(
            f"(not a goal) {engine}: create→completed ÷ engine + graph floor",
            _paired(results, f"lgos {engine}", (1, f"{engine} engine + graph floor")),
            1.5,
            True,
        )
        for engine in ("dbos", "hatchet")
    ]
    found += [
        Goal(
            f"(not a goal) {engine}: runs/s ÷ engine + graph floor runs/s",
            _paired(results, f"lgos {engine} burst", (1, f"{engine} engine + graph floor burst")),
            0.7,
            False,
        )
        for engine in ("dbos", "hatchet")
    ]
    found.append(
        Goal(
            "review round trip, foreground ÷ review floor",
            _paired(results, "lgos review foreground", (1, "review floor")),
            1.3,
            True,
        )
    )
    found.append(
        Goal(
            "(not a goal) review round trip, foreground, store=false ÷ review floor",
            _paired(results, "lgos review foreground, store=false", (1, "review floor")),
            1.3,
            True,
        )
    )
    found.append(
        Goal(
            "review round trip, background (DBOS) ÷ (review floor + 2 × engine floor)",
            _paired(
                results,
                "lgos review background dbos",
                (1, "review floor"),
                (2, "dbos engine floor"),
            ),
            1.3,
            True,
        )
    )
    found.append(
        Goal(
            "stream tail: event written → client receives, p50",
            statistics.median(results.tail_samples) if results.tail_samples else None,
            10,
            True,
            " ms",
        )
    )
    return [goal for goal in found if goal.ratio is not None]


def machine(mode: str, seconds: float, load: tuple[float, float]) -> dict[str, str]:
    commit = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True
    ).stdout.strip()
    return {
        "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
        "mode": mode,
        "seconds": f"{seconds:.0f}",
        "machine": f"{platform.machine()}, {os.cpu_count()} logical CPUs, {platform.system()} "
        f"{platform.release()}",
        "load": f"1-minute load average {load[0]:.1f} before, {load[1]:.1f} after",
        "python": platform.python_version(),
        "commit": commit,
    }


_LABELS = {
    "dbos engine floor": ("DBOS alone: enqueue → result", "ms"),
    "hatchet engine floor": ("Hatchet alone: trigger → result", "ms"),
    "hatchet floor, REST polled": ("Hatchet alone: trigger → REST shows completed", "ms"),
    "dbos engine + graph floor": ("DBOS running background-mock itself: enqueue → result", "ms"),
    "hatchet engine + graph floor": (
        "Hatchet running background-mock itself: trigger → result",
        "ms",
    ),
    "checkpoint floor": ("LangGraph alone, background-mock, PostgreSQL, durability=sync", "ms"),
    "review floor": ("LangGraph alone, background-interrupt: pause + resume", "ms"),
    "lgos memory": ("LGOS in-memory engine: create → completed", "ms"),
    "lgos dbos": ("LGOS DBOS: create → completed", "ms"),
    "lgos hatchet": ("LGOS Hatchet: create → completed", "ms"),
    "lgos review foreground": ("LGOS review round trip, foreground, PostgreSQL", "ms"),
    "lgos review foreground, store=false": (
        "LGOS review round trip, foreground, PostgreSQL, no stored Responses",
        "ms",
    ),
    "lgos review background dbos": ("LGOS review round trip, background DBOS", "ms"),
    "lgos stream tail dbos": (
        "LGOS stream tail (DBOS): append → client (median of pass p50s)",
        "ms",
    ),
    "dbos engine floor burst": ("DBOS alone, burst", "runs/s"),
    "hatchet engine floor burst": ("Hatchet alone, burst", "runs/s"),
    "dbos engine + graph floor burst": ("DBOS running background-mock itself, burst", "runs/s"),
    "hatchet engine + graph floor burst": (
        "Hatchet running background-mock itself, burst",
        "runs/s",
    ),
    "lgos memory burst": ("LGOS in-memory engine, burst", "runs/s"),
    "lgos dbos burst": ("LGOS DBOS, burst", "runs/s"),
    "lgos hatchet burst": ("LGOS Hatchet, burst", "runs/s"),
}


def markdown(results: Results, meta: dict[str, str], counts: Counts) -> str:
    lines = [
        f"- Date: {meta['date']} ({meta['mode']} run, {counts.passes} passes, "
        f"{meta['seconds']} s); commit {meta['commit']}",
        f"- Machine: {meta['machine']}; {meta['load']}; Python {meta['python']}",
        f"- Counts: {counts.runs} one-at-a-time runs per latency batch, bursts of "
        f"{counts.burst} ({IN_FLIGHT} creates in flight), {counts.ticks} stream-tail events "
        "per pass",
        "",
        "| goal | limit | measured | |",
        "| --- | ---: | ---: | :---: |",
        *(goal.row() for goal in goals(results)),
        "",
        "| measurement | median | per pass |",
        "| --- | ---: | --- |",
    ]
    for name, values in results.passes.items():
        label, unit = _LABELS.get(name, (name, ""))
        shown = ", ".join(f"{value:.1f}" for value in values)
        lines.append(f"| {label} | {statistics.median(values):.1f} {unit} | {shown} |")
    if results.cpu:
        lines += [
            "",
            "CPU per run during the bursts (user + system, every process serving the burst: "
            "LGOS's API and workers; the floors' workers only, their client runs in the "
            "benchmark process; engines' own services not counted), and of the checkpoint "
            "floor (this process, one run at a time):",
            "",
            "| burst | CPU ms per run | per pass |",
            "| --- | ---: | --- |",
        ]
        for name, values in results.cpu.items():
            label, _ = _LABELS.get(name, (name, ""))
            shown = ", ".join(f"{value:.1f}" for value in values)
            lines.append(f"| {label} | {statistics.median(values):.1f} | {shown} |")
    if results.tail_samples:
        samples = sorted(results.tail_samples)
        p90 = samples[min(len(samples) - 1, int(len(samples) * 0.9))]
        lines += [
            "",
            f"Stream tail, all {len(samples)} events: p50 {statistics.median(samples):.1f} ms, "
            f"p90 {p90:.1f} ms, max {samples[-1]:.1f} ms.",
        ]
    return "\n".join(lines) + "\n"


def plot(results: Results, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    latency = [name for name in results.passes if not name.endswith("burst")]
    bursts = [name for name in results.passes if name.endswith("burst")]
    figure, (left, right) = plt.subplots(1, 2, figsize=(13, 5.5), width_ratios=(3, 2))
    colors = ["#9aa5b1" if "floor" in name else "#2b6cb0" for name in latency]
    values = [results.median(name) or 0 for name in latency]
    left.barh(range(len(latency)), values, color=colors)
    for row, value in enumerate(values):
        left.text(value, row, f" {value:.1f}", va="center", fontsize=7)
    left.set_yticks(range(len(latency)))
    left.set_yticklabels(latency, fontsize=8)
    left.invert_yaxis()
    left.set_xscale("log")
    left.set_xlabel("median ms (log; grey: floors, blue: LGOS)")
    left.set_title("Latency")
    colors = ["#9aa5b1" if "floor" in name else "#2b6cb0" for name in bursts]
    values = [results.median(name) or 0 for name in bursts]
    right.barh(range(len(bursts)), values, color=colors)
    for row, value in enumerate(values):
        right.text(value, row, f" {value:.1f}", va="center", fontsize=7)
    right.set_yticks(range(len(bursts)))
    right.set_yticklabels(bursts, fontsize=8)
    right.invert_yaxis()
    right.set_xlabel("runs/s (median over passes)")
    right.set_title("Throughput")
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=110)
    plt.close(figure)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.durable", description=__doc__)
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="fewer runs: a few minutes")
    size.add_argument("--smoke", action="store_true", help="tiny counts: proves it runs")
    parser.add_argument("--engines", default="memory,dbos,hatchet")
    parser.add_argument(
        "--out", type=Path, default=REPO / "benchmarks" / ".results", help="report directory"
    )
    args = parser.parse_args(argv)
    stop_children_on_sigterm()
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    counts = MODES[mode]
    engines = [name.strip() for name in args.engines.split(",") if name.strip()]
    if not {"memory", "dbos"} <= set(engines):
        parser.error("memory and dbos are needed (foreground review, stream tail)")

    from dbos import DBOS

    from lgos.integrations.dbos import sqlalchemy_url

    began, load_before = time.time(), os.getloadavg()[0]
    with ExitStack() as stack:
        hatchet_env = stack.enter_context(
            engine_settings("hatchet" if "hatchet" in engines else "none")
        )
        os.environ.update(hatchet_env)  # the floor's Hatchet client in this process
        deployments = {
            engine: stack.enter_context(lgos_deployment(engine, stack, hatchet_env))
            for engine in engines
        }
        floor_url = sqlalchemy_url(stack.enter_context(database()))
        DBOS.migrate(floor_url)
        # The engine + graph floor's checkpoints go where the checkpoint floor's do (the
        # benchmark sets up the saver's tables there before any job runs).
        graph_env = {CHECKPOINT_URI_VARIABLE: deployments["memory"].uri}
        floors_served = {"dbos": floor_workers("dbos", environment(**graph_env), floor_url)}
        if "hatchet" in engines:
            floors_served["hatchet"] = floor_workers(
                "hatchet", environment(**hatchet_env, **graph_env)
            )
        stack.enter_context(
            started([p for ps in floors_served.values() for p in ps], r"floor\.ready")
        )
        dbos_floor = DBOSFloor(floor_url)
        stack.callback(dbos_floor.close)
        hatchet_floor = HatchetFloor() if "hatchet" in engines else None
        results = asyncio.run(
            measure(counts, deployments, dbos_floor, hatchet_floor, floors_served)
        )

    meta = machine(mode, time.time() - began, (load_before, os.getloadavg()[0]))
    text = markdown(results, meta, counts)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    payload = {
        "meta": meta,
        "counts": counts.__dict__,
        "passes": results.passes,
        "cpu_ms_per_run": results.cpu,
        "medians": {name: results.median(name) for name in results.passes},
        "stream_tail_samples_ms": results.tail_samples,
        "goals": [
            {"goal": g.name, "limit": g.limit, "measured": g.ratio, "met": g.met}
            for g in goals(results)
        ],
    }
    (args.out / "durable.json").write_text(json.dumps(payload, indent=2) + "\n")
    (args.out / "durable.md").write_text(text)
    plot(results, args.out / "img" / "durable.png")
    print(f"wrote {args.out / 'durable.json'}, durable.md and img/durable.png")
    return 0


if __name__ == "__main__":
    sys.exit(main())
