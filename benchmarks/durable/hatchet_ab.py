"""Two checkouts of LGOS on Hatchet, side by side with the engine + graph floor (not a test).

    uv run --with-requirements benchmarks/requirements.txt \\
        python -m benchmarks.durable.hatchet_ab --before ../other-checkout [--passes 5]

On one Hatchet engine (started here), three things run `background-mock`: Hatchet itself (two
floor workers, as in `just bench-durable`'s engine + graph floor), LGOS from `--before` and LGOS
from this checkout (each `lgos serve` and two `lgos worker`, in a Hatchet namespace and on a
throwaway database of its own; `--before` needs its own synced `.venv`). Every pass measures the
three one after the other, in an order that turns from pass to pass: create → completed one at a
time and a burst (runs/s), LGOS's both polled (every 10 ms one at a time, every 250 ms in a
burst) and streamed (the client follows the run's stream to its end: push, as the floor's
client waits on the engine's subscription; the goals), and the floor's latency also read over
REST every 10 ms (the polled figures' floor, not a goal). A machine
that other work loads moves every figure, so the ratios pair figures seconds apart, and the
bursts' CPU per run is split by who spent it: LGOS's API, its workers (the floor's workers), the
engine, and PostgreSQL (the backends of the deployment's and the engine's databases).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from pathlib import Path

import psutil
import psycopg
from openai import AsyncOpenAI
from psycopg.conninfo import conninfo_to_dict

from benchmarks.durable.deployments import (
    ADMIN_URI,
    REGISTRY,
    Process,
    cpu_seconds,
    database,
    engine_settings,
    environment,
    exported,
    started,
    stop_children_on_sigterm,
    tree_cpu_seconds,
)
from benchmarks.durable.floor_worker import CHECKPOINT_URI_VARIABLE
from benchmarks.durable.floors import HatchetFloor, floor_workers
from benchmarks.durable.lgos_runs import (
    lgos_burst,
    lgos_burst_streamed,
    lgos_latency,
    lgos_latency_streamed,
)

FLOOR = "floor"


def dbname(conninfo: str) -> str:
    return str(conninfo_to_dict(conninfo)["dbname"])


def engine_process(hatchet_env: dict[str, str]) -> psutil.Process:
    """The engine serving `hatchet_env`: the hatchet-lite whose gRPC port is the client's."""
    port = hatchet_env["HATCHET_CLIENT_HOST_PORT"].rsplit(":", 1)[1]
    for proc in psutil.process_iter(["name"]):
        if proc.info["name"] != "hatchet-lite":
            continue
        try:
            if proc.environ().get("SERVER_GRPC_PORT") == port:
                return proc
        except psutil.Error:
            continue
    raise RuntimeError("the engine's process was not found")


def postgres_cpu(databases: list[str]) -> float:
    """CPU of the PostgreSQL backends connected to these databases now."""
    with psycopg.connect(ADMIN_URI, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = ANY(%s)", (databases,)
        ).fetchall()
    return tree_cpu_seconds(pid for (pid,) in rows)


class Target:
    """One LGOS checkout deployed on the engine: its processes, client and database."""

    def __init__(self, stack: ExitStack, root: Path, name: str, hatchet_env: dict[str, str]):
        self.uri = stack.enter_context(database())
        env = environment(
            LGOS_BACKGROUND="hatchet",
            LGOS_POSTGRES_URI=self.uri,
            LGOS_INTERRUPT_SWEEP_INTERVAL_MINUTES="0",
            HATCHET_CLIENT_NAMESPACE=f"{name}_",
            **hatchet_env,
        )
        program = str(root / ".venv" / "bin" / "lgos")
        self.api = Process(["serve", REGISTRY, "--port", "0"], env, program, cwd=root)
        stack.callback(self.api.stop)
        base_url = self.api.wait_for(r"Uvicorn running on (http://[\d.]+:\d+)", timeout=300)
        self.workers = [
            Process(
                ["worker", REGISTRY], {**env, "LGOS_WORKER_ID": f"ab-{name}-{i}"}, program, cwd=root
            )
            for i in range(2)
        ]
        stack.enter_context(started(self.workers, r'"message": "worker\.started"'))
        self.client = AsyncOpenAI(base_url=f"{base_url}/v1", api_key="ab", max_retries=0)


class Passes:
    def __init__(self) -> None:
        self.figures: dict[str, list[float]] = {}

    def add(self, name: str, value: float) -> None:
        self.figures.setdefault(name, []).append(value)

    def median(self, name: str) -> float:
        return statistics.median(self.figures[name])

    def ratio(self, top: str, bottom: str) -> tuple[float, list[float]]:
        pairs = [a / b for a, b in zip(self.figures[top], self.figures[bottom], strict=True)]
        return statistics.median(pairs), pairs


STREAMED = " streamed"
REST_POLLED = "floor, REST polled"


async def measure(
    args: argparse.Namespace,
    targets: dict[str, Target],
    floor: HatchetFloor,
    floor_processes: list[Process],
    engine: psutil.Process,
    databases: dict[str, str],
) -> Passes:
    """Every pass: the floor (its latency by subscription and, not a goal, read over REST
    every 10 ms; its burst), then each target polled and streamed (`lgos_runs`)."""
    passes = Passes()

    def target_of(name: str) -> Target:
        return targets[name.removesuffix(STREAMED)]

    async def latency(name: str) -> float:
        if name == FLOOR:
            return await floor.latency(args.runs, graph=True)
        if name == REST_POLLED:
            return await floor.latency_polled(args.runs, graph=True)
        if name.endswith(STREAMED):
            return await lgos_latency_streamed(target_of(name).client, args.runs)
        return await lgos_latency(target_of(name).client, args.runs)

    async def burst(name: str) -> float:
        parts = (
            {"workers": floor_processes}
            if name == FLOOR
            else {"api": [target_of(name).api], "workers": target_of(name).workers}
        )
        own = [databases[name.removesuffix(STREAMED)], databases["engine"]]
        before = {part: cpu_seconds(processes) for part, processes in parts.items()}
        engine_before, postgres_before = tree_cpu_seconds([engine.pid]), postgres_cpu(own)
        # The benchmark's own process is the clients (LGOS's creates and polls or streams,
        # the floor's triggers and result subscription); it shares the machine's cores with
        # what it measures.
        client_before = time.process_time()
        run: Callable[[], Awaitable[float]]
        if name == FLOOR:
            run = lambda: floor.burst(args.burst, graph=True)  # noqa: E731
        elif name.endswith(STREAMED):
            run = lambda: lgos_burst_streamed(target_of(name).client, args.burst)  # noqa: E731
        else:
            run = lambda: lgos_burst(target_of(name).client, args.burst)  # noqa: E731
        rate = await run()
        per_run = 1000 / args.burst
        for part, processes in parts.items():
            passes.add(f"{name} cpu {part}", (cpu_seconds(processes) - before[part]) * per_run)
        passes.add(f"{name} cpu engine", (tree_cpu_seconds([engine.pid]) - engine_before) * per_run)
        passes.add(f"{name} cpu postgres", (postgres_cpu(own) - postgres_before) * per_run)
        passes.add(f"{name} cpu client", (time.process_time() - client_before) * per_run)
        return rate

    lgos = [f"{name}{way}" for name in targets for way in ("", STREAMED)]
    latency_names = [FLOOR, REST_POLLED, *lgos]
    burst_names = [FLOOR, *lgos]
    for name in latency_names:  # warm-up
        await latency(name)
    for name in burst_names:
        await burst(name)
    for number in range(args.passes):
        for names, step, kind in (
            (latency_names, latency, "latency"),
            (burst_names, burst, "burst"),
        ):
            turn = number % len(names)
            for name in names[turn:] + names[:turn]:
                passes.add(f"{name} {kind}", await step(name))
        shown = ", ".join(
            f"{name} {values[-1]:.1f}"
            for name, values in passes.figures.items()
            if name.endswith(("latency", "burst"))
        )
        load = os.getloadavg()[0]
        print(f"pass {number + 1} ({time.strftime('%H:%M:%S')}, load {load:.1f}): {shown}")
    for target in targets.values():
        await target.client.close()
    return passes


def report(passes: Passes, targets: list[str]) -> str:
    columns = [FLOOR, REST_POLLED, *(f"{name}{way}" for name in targets for way in ("", STREAMED))]
    lines = ["| figure (median over passes) | " + " | ".join(columns) + " |"]
    lines.append("| --- |" + " ---: |" * len(columns))

    def row(label: str, key: str, unit: str) -> None:
        cells = [
            f"{passes.median(f'{name} {key}'):.1f}{unit}"
            if f"{name} {key}" in passes.figures
            else "—"
            for name in columns
        ]
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    row("create → completed", "latency", " ms")
    row("runs/s (burst)", "burst", "")
    for part in ("api", "workers", "engine", "postgres", "client"):
        row(f"CPU per run in the burst: {part}", f"cpu {part}", " ms")

    def ratio(label: str, top: str, bottom: str) -> str:
        value, values = passes.ratio(top, bottom)
        return f"{label} {value:.2f}× ({', '.join(f'{x:.2f}' for x in values)})"

    for name in targets:
        streamed = name + STREAMED
        lines.append(
            f"\n{name}, streamed (the goals, push against push): "
            + ratio("create→completed ÷ floor", f"{streamed} latency", f"{FLOOR} latency")
            + "; "
            + ratio("runs/s ÷ floor", f"{streamed} burst", f"{FLOOR} burst")
        )
        lines.append(
            f"{name}, polled (not a goal): "
            + ratio(
                "create→completed ÷ REST-polled floor",
                f"{name} latency",
                f"{REST_POLLED} latency",
            )
            + "; "
            + ratio("÷ floor", f"{name} latency", f"{FLOOR} latency")
            + "; "
            + ratio("runs/s ÷ floor", f"{name} burst", f"{FLOOR} burst")
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, required=True, help="the other checkout")
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--runs", type=int, default=20, help="one-at-a-time runs per pass")
    parser.add_argument("--burst", type=int, default=100, help="runs per burst")
    args = parser.parse_args(argv)
    stop_children_on_sigterm()
    load = os.getloadavg()[0]
    with ExitStack() as stack:
        hatchet_env = stack.enter_context(engine_settings("hatchet"))
        stack.enter_context(exported(hatchet_env))  # the floor's client in this process
        engine = engine_process(hatchet_env)
        targets = {
            "before": Target(stack, args.before.resolve(), "before", hatchet_env),
            "after": Target(stack, Path.cwd(), "after", hatchet_env),
        }
        floor_uri = stack.enter_context(database())
        asyncio.run(set_up_saver(floor_uri))
        floor_processes = floor_workers(
            "hatchet", environment(**hatchet_env, **{CHECKPOINT_URI_VARIABLE: floor_uri})
        )
        stack.enter_context(started(floor_processes, r"floor\.ready"))
        databases = {name: dbname(target.uri) for name, target in targets.items()}
        databases[REST_POLLED] = dbname(floor_uri)
        databases[FLOOR] = dbname(floor_uri)
        databases["engine"] = dbname(engine.environ()["DATABASE_URL"].split("?")[0])
        passes = asyncio.run(
            measure(args, targets, HatchetFloor(), floor_processes, engine, databases)
        )
    print(f"\n1-minute load average {load:.1f} before, {os.getloadavg()[0]:.1f} after\n")
    print(report(passes, list(targets)))
    return 0


async def set_up_saver(uri: str) -> None:
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

    async with AsyncPostgresSaver.from_conn_string(uri) as saver:
        await saver.setup()


if __name__ == "__main__":
    sys.exit(main())
