"""Background Responses: latency and throughput per engine (a measurement, not a test).

    uv run python -m benchmarks.background [--runs 30] [--burst 200]

For each engine it starts real processes on loopback (the in-memory engine: one `lgos serve`;
DBOS: one `lgos serve` and two `lgos worker` on a throwaway PostgreSQL database; Hatchet: the
same, plus a Hatchet engine built by `just setup` and started by scripts/hatchet-bootstrap.sh on
a database of its own) serving the demo registry, then measures with the official SDK:

- latency: the median time from `create` to the first poll that sees `completed`, for
  `background-mock` with `delay_seconds: 0`, one run at a time (polling every 10 ms);
- throughput: `--burst` runs created at once (16 creates in flight), each then polled every
  250 ms until completed; runs per second = burst / (last completion - first create).

Set LGOS_BENCH_POSTGRES_ADMIN_URI to use another PostgreSQL server (default: the local one).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from openai import AsyncOpenAI
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

REPO = Path(__file__).resolve().parent.parent
LGOS = str(Path(sys.executable).parent / "lgos")
REGISTRY = "demo.registry:create_registry"
ADMIN_URI = os.environ.get(
    "LGOS_BENCH_POSTGRES_ADMIN_URI", "postgresql://postgres@127.0.0.1:5432/postgres"
)
NO_DELAY = {"lgos_settings": '{"delay_seconds": 0}'}
POLL_SECONDS = 0.01
BURST_POLL_SECONDS = 0.25
_RUNNING = re.compile(r"Uvicorn running on (http://[\d.]+:\d+)")


def stop_children_on_sigterm() -> None:
    """Make SIGTERM (from `timeout` or `kill`) unwind this process like Ctrl-C does, so the
    `with` blocks that started servers, workers and engines stop them: by default Python ends
    at once and leaves them running, orphaned, loading the machine for later measurements."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))


class Process:
    def __init__(self, args: list[str], env: dict[str, str], program: str = LGOS) -> None:
        self.popen = subprocess.Popen(
            [program, *args],
            cwd=REPO,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self._seen = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            with self._seen:
                self.lines.append(line)
                self._seen.notify_all()

    def wait_for(self, pattern: str, timeout: float = 120.0) -> str:
        deadline = time.monotonic() + timeout
        with self._seen:
            while True:
                for line in self.lines:
                    found = re.search(pattern, line)
                    if found:
                        return found.group(1) if found.groups() else line
                if self.popen.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("process failed to start:\n" + "".join(self.lines[-40:]))
                self._seen.wait(1.0)

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.send_signal(signal.SIGTERM)
            try:
                self.popen.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


@contextmanager
def database() -> Iterator[str]:
    name = f"lgos_bench_bg_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(ADMIN_URI, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    params = conninfo_to_dict(ADMIN_URI)
    params["dbname"] = name
    try:
        yield make_conninfo(**params)
    finally:
        with psycopg.connect(ADMIN_URI, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def environment(**values: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("LGOS_")}
    env.update(values, PYTHONUNBUFFERED="1")
    return env


@contextmanager
def engine_settings(engine: str) -> Iterator[dict[str, str]]:
    """Client settings of the engine's own service (only Hatchet has one)."""
    if engine != "hatchet":
        yield {}
        return
    from tests.support import hatchet

    with (
        tempfile.TemporaryDirectory(prefix="lgos-bench-hatchet-") as state,
        hatchet.running_engine(Path(state)) as settings,
    ):
        yield settings


@contextmanager
def deployment(engine: str) -> Iterator[str]:
    """Start the engine's processes; yield the API's base URL."""
    with database() as uri, engine_settings(engine) as settings:
        env = environment(
            LGOS_BACKGROUND=engine,
            LGOS_POSTGRES_URI=uri,
            LGOS_INTERRUPT_SWEEP_INTERVAL_MINUTES="0",
            **settings,
        )
        processes = [Process(["serve", REGISTRY, "--port", "0"], env)]
        if engine in ("dbos", "hatchet"):
            processes += [
                Process(["worker", REGISTRY], {**env, "LGOS_WORKER_ID": f"bench-{index}"})
                for index in range(2)
            ]
        try:
            base_url = processes[0].wait_for(_RUNNING.pattern, timeout=300)
            for worker in processes[1:]:
                worker.wait_for(r'"message": "worker\.started"', timeout=300)
            yield base_url
        finally:
            for process in processes:
                process.stop()


async def until_completed(
    client: AsyncOpenAI, response_id: str, poll: float = POLL_SECONDS
) -> None:
    while True:
        response = await client.responses.retrieve(response_id)
        if response.status == "completed":
            return
        if response.status not in ("queued", "in_progress"):
            raise RuntimeError(f"{response_id} ended {response.status}")
        await asyncio.sleep(poll)


async def create(client: AsyncOpenAI, text: str) -> str:
    accepted = await client.responses.create(
        model="background-mock", input=text, background=True, metadata=NO_DELAY
    )
    return accepted.id


async def latency(client: AsyncOpenAI, runs: int) -> list[float]:
    seconds = []
    for index in range(runs):
        started = time.perf_counter()
        await until_completed(client, await create(client, f"latency {index}"))
        seconds.append(time.perf_counter() - started)
    return seconds


async def throughput(client: AsyncOpenAI, burst: int) -> float:
    in_flight = asyncio.Semaphore(16)

    async def one(index: int) -> None:
        async with in_flight:
            response_id = await create(client, f"burst {index}")
        # Gentle polling: hundreds of clients polling every 10 ms would measure the API.
        await until_completed(client, response_id, poll=BURST_POLL_SECONDS)

    started = time.perf_counter()
    await asyncio.gather(*(one(index) for index in range(burst)))
    return burst / (time.perf_counter() - started)


async def measure(base_url: str, runs: int, burst: int) -> dict[str, float]:
    async with AsyncOpenAI(base_url=f"{base_url}/v1", api_key="bench", max_retries=0) as client:
        await latency(client, 3)  # warm-up: imports, pools, first queue poll
        seconds = await latency(client, runs)
        rate = await throughput(client, burst)
    return {
        "median_create_to_completed_ms": round(statistics.median(seconds) * 1000, 1),
        "p90_create_to_completed_ms": round(statistics.quantiles(seconds, n=10)[-1] * 1000, 1),
        "runs_per_second": round(rate, 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--burst", type=int, default=200)
    parser.add_argument("--engines", default="memory,dbos,hatchet")
    args = parser.parse_args()
    stop_children_on_sigterm()
    results = {}
    for engine in args.engines.split(","):
        with deployment(engine) as base_url:
            results[engine] = asyncio.run(measure(base_url, args.runs, args.burst))
        print(engine, json.dumps(results[engine]), flush=True)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
