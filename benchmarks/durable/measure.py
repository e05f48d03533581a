"""One run of the suite: every measurement once per pass, one after the other, so each ratio
pairs figures measured a few seconds apart."""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field

from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
from openai import AsyncOpenAI
from psycopg.rows import dict_row
from psycopg_pool import AsyncConnectionPool

from benchmarks.durable.deployments import Deployment, Process, cpu_seconds, print_server_errors
from benchmarks.durable.floors import DBOSFloor, HatchetFloor, LangGraphFloors
from benchmarks.durable.lgos_runs import (
    STREAMED,
    lgos_burst,
    lgos_burst_streamed,
    lgos_latency,
    lgos_latency_streamed,
    lgos_review,
    stream_tail,
)


@dataclass(frozen=True)
class DurableCounts:
    passes: int
    runs: int  # one-at-a-time runs per latency batch
    burst: int  # runs per burst
    ticks: int  # events appended per stream-tail batch


MODES = {
    "full": DurableCounts(passes=5, runs=20, burst=100, ticks=30),
    "quick": DurableCounts(passes=3, runs=8, burst=40, ticks=15),
    "smoke": DurableCounts(passes=1, runs=2, burst=8, ticks=3),
}


@dataclass
class DurableResults:
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


async def measure(
    counts: DurableCounts,
    deployments: dict[str, Deployment],
    dbos_floor: DBOSFloor | None,
    hatchet_floor: HatchetFloor | None,
    floors_served: dict[str, list[Process]],
) -> DurableResults:
    from lgos.integrations.postgres import open_postgres

    results = DurableResults()
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
            steps.append(
                (
                    "hatchet engine + graph floor, REST polled",
                    lambda: hatchet_floor.latency_polled(counts.runs, graph=True),
                )
            )
        steps += [
            ("checkpoint floor", lambda: floors.checkpoint(counts.runs)),
            ("review floor", lambda: floors.review_round_trip(counts.runs)),
        ]
        for name, client in clients.items():
            steps.append((f"lgos {name}", lambda c=client: lgos_latency(c, counts.runs)))
        if "hatchet" in clients:
            # Push against push: the client follows the run's stream to its end, as the
            # floor's waits on the engine's subscription (`lgos_runs.streamed_run`).
            steps.append(
                (
                    f"lgos hatchet{STREAMED}",
                    lambda: lgos_latency_streamed(clients["hatchet"], counts.runs),
                )
            )
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
        engine_floors: dict[str, DBOSFloor | HatchetFloor | None] = {
            "dbos": dbos_floor,
            "hatchet": hatchet_floor,
        }
        for engine, floor in engine_floors.items():
            if floor is None:
                continue
            for graph, label in (
                (False, "engine floor burst"),
                (True, "engine + graph floor burst"),
            ):
                steps.append(
                    (
                        f"{engine} {label}",
                        lambda f=floor, g=graph: f.burst(counts.burst, graph=g),
                    )
                )
                served[f"{engine} {label}"] = floors_served[engine]
        for name, client in clients.items():
            steps.append((f"lgos {name} burst", lambda c=client: lgos_burst(c, counts.burst)))
            served[f"lgos {name} burst"] = deployments[name].processes
        if "hatchet" in clients:
            steps.append(
                (
                    f"lgos hatchet{STREAMED} burst",
                    lambda: lgos_burst_streamed(clients["hatchet"], counts.burst),
                )
            )
            served[f"lgos hatchet{STREAMED} burst"] = deployments["hatchet"].processes

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
