"""How many SQL statements LGOS's API sends per durable operation (not a test).

    uv run python -m benchmarks.durable.statements [--runs 20]

Serves the demo registry in this process (PostgreSQL persistence, on a throwaway database)
and counts every statement psycopg's cursors execute, the engine clients' included:

- the foreground review round trip on `background-interrupt` (pause, then the answer), with
  the in-memory engine;
- a background create and one poll of it (`GET /v1/responses/{id}`), with DBOS (the API
  only: no worker runs, so the run stays queued and every poll reads the same state);
- LGOS's part of a background run in a worker (`JobExecutor` with durable runs, as `lgos
  worker` builds it), on the jobs those creates queued: DBOS's own statements around it are
  not counted;
- with `--hatchet`, the same API on a Hatchet engine (started here): its statements and its
  REST requests to the engine (with the TCP connections they opened) per create, per poll of
  a run still queued and of a run whose end is logged, and per run created and polled every
  10 ms until completed by one `lgos worker` (the requests the API's reads go on making once
  the poll has answered are counted for a few seconds after each batch).

Prints the statements per operation, grouped by their first words, and this process's CPU
time per operation (the HTTP client's included: compare versions, not with other figures).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import re
import threading
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx
import psycopg
from openai import AsyncOpenAI

from benchmarks.durable.deployments import REGISTRY, database

NO_DELAY = {"lgos_settings": '{"delay_seconds": 0}'}


class Counter:
    """Counts statements by kind while `counting` is on."""

    def __init__(self) -> None:
        self.counts: collections.Counter[str] = collections.Counter()
        self.counting = False
        self.cpu_seconds = 0.0

    def record(self, query: Any) -> None:
        if not self.counting:
            return
        text = query.as_string(None) if hasattr(query, "as_string") else str(query)
        words = re.sub(r"\s+", " ", text.strip()).split(" ")
        self.counts[" ".join(words[:4])[:70]] += 1

    @contextmanager
    def measuring(self) -> Iterator[collections.Counter[str]]:
        self.counts = collections.Counter()
        self.counting = True
        started = time.process_time()
        try:
            yield self.counts
        finally:
            self.counting = False
            self.cpu_seconds = time.process_time() - started


def install(counter: Counter) -> None:
    """Wrap psycopg's cursors (async and sync: DBOS's client uses the sync driver)."""
    for cls in (psycopg.AsyncCursor, psycopg.AsyncServerCursor):
        for name in ("execute", "executemany"):
            original = getattr(cls, name)

            async def wrapped(self: Any, query: Any, *args: Any, _o: Any = original, **kw: Any):
                counter.record(query)
                return await _o(self, query, *args, **kw)

            setattr(cls, name, wrapped)
    for cls in (psycopg.Cursor, psycopg.ServerCursor):
        for name in ("execute", "executemany"):
            original = getattr(cls, name)

            def wrapped_sync(self: Any, query: Any, *args: Any, _o: Any = original, **kw: Any):
                counter.record(query)
                return _o(self, query, *args, **kw)

            setattr(cls, name, wrapped_sync)


@asynccontextmanager
async def served(uri: str, engine: str) -> AsyncIterator[httpx.AsyncClient]:
    from lgos import ServerSettings, create_app

    settings = ServerSettings(
        REGISTRY=REGISTRY,
        POSTGRES_URI=uri,
        BACKGROUND=engine,  # type: ignore[arg-type]
        INTERRUPT_SWEEP_INTERVAL_MINUTES=0,
        RESPONSE_SWEEP_INTERVAL_MINUTES=0,
    )
    app = create_app(REGISTRY, settings=settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://lgos/v1") as http:
            yield http


def report(name: str, counts: collections.Counter[str], runs: int, cpu_seconds: float) -> None:
    total = sum(counts.values())
    print(
        f"{name}: {total / runs:.1f} statements, {cpu_seconds * 1000 / runs:.2f} ms CPU "
        "per operation"
    )
    for kind, count in counts.most_common():
        print(f"  {count / runs:5.1f}  {kind}")


async def review_round_trip(http: httpx.AsyncClient, index: int, *, store: bool = True) -> None:
    """One foreground review round trip on `background-interrupt`: pause, answer, final answer
    (with `store: false`, answered through the run the paused Response's id names)."""
    paused = (
        await http.post(
            "/responses",
            json={
                "model": "background-interrupt",
                "input": f"review {index}",
                "metadata": NO_DELAY,
                "store": store,
            },
        )
    ).json()
    call = next(i for i in paused["output"] if i["type"] == "function_call")
    answer = {"type": "function_call_output", "call_id": call["call_id"], "output": "approve"}
    final = await http.post(
        "/responses",
        json={
            "model": "background-interrupt",
            "previous_response_id": paused["id"],
            "input": [answer],
            "metadata": NO_DELAY,
            "store": store,
        },
    )
    assert final.json()["status"] == "completed", final.text


WARM_ROUND_TRIPS = 10


async def review(counter: Counter, runs: int) -> None:
    with database() as uri:
        async with served(uri, "memory") as http:
            # Uncounted: the first round trips' one-time work (imports, caches, the pool's
            # connections, psycopg preparing each statement on its fifth use) weighed on the
            # first batch alone: measured first, either batch read about 10 ms more a trip.
            for index in range(WARM_ROUND_TRIPS):
                await review_round_trip(http, runs + index, store=index % 2 == 0)
            for store in (True, False):
                with counter.measuring() as counts:
                    for index in range(runs):
                        await review_round_trip(http, index, store=store)
                what = "" if store else ", store=false"
                report(
                    f"foreground review round trip (pause + answer{what})",
                    counts,
                    runs,
                    counter.cpu_seconds,
                )


async def background(counter: Counter, runs: int) -> None:
    from lgos import ServerSettings
    from lgos.background.executor import DurableRuns, JobExecutor
    from lgos.integrations.dbos import open_dbos_client
    from lgos.server.app import import_factory, open_registry
    from lgos.server.resources import open_resources
    from lgos.wire import ids

    with database() as uri:
        async with served(uri, "dbos") as http:
            with counter.measuring() as created:
                response_ids = []
                for index in range(runs + 1):
                    response = await http.post(
                        "/responses",
                        json={
                            "model": "background-mock",
                            "input": f"poll {index}",
                            "background": True,
                            "metadata": NO_DELAY,
                        },
                    )
                    response_ids.append(response.json()["id"])
            report("background create (DBOS)", created, runs + 1, counter.cpu_seconds)
            for response_id in response_ids:  # warm
                await http.get(f"/responses/{response_id}")
            with counter.measuring() as polled:
                for response_id in response_ids[1:]:
                    poll = await http.get(f"/responses/{response_id}")
                    assert poll.json()["status"] == "queued", poll.text
            report("background poll (DBOS)", polled, runs, counter.cpu_seconds)
        settings = ServerSettings(REGISTRY=REGISTRY, POSTGRES_URI=uri, BACKGROUND="dbos")
        async with (
            open_resources(settings) as resources,
            open_dbos_client(uri, resources.events) as engine,
            open_registry(import_factory(REGISTRY), resources) as registry,
        ):
            executor = JobExecutor(
                registry=registry,
                durable=DurableRuns(resources.checkpointer, resources.run_coordinator),
                events=resources.events,
            )
            queued = []
            for response_id in response_ids:
                parsed = ids.parse_run_response_id(response_id)
                assert parsed is not None
                run = await engine.get(parsed.nonce)
                assert run is not None
                queued.append(run)
            await executor(queued[0].job, queued[0].id)  # warm
            with counter.measuring() as ran:
                for run in queued[1:]:
                    result = await executor(run.job, run.id)
                    assert result["status"] == "completed", result
            report("background run in a worker, LGOS's part", ran, runs, counter.cpu_seconds)


class EngineCalls:
    """Counts the REST requests the Hatchet SDK's client sends (from any thread) and the TCP
    connections they open, while `counting` is on."""

    def __init__(self) -> None:
        self.requests = 0
        self.connections = 0
        self.counting = False
        self._lock = threading.Lock()

    def install(self) -> None:
        from hatchet_sdk.clients.rest import rest
        from urllib3.connection import HTTPConnection

        calls = self
        request, connect = rest.RESTClientObject.request, HTTPConnection.connect

        def counted_request(client: Any, *args: Any, **kw: Any) -> Any:
            calls.add(requests=1)
            return request(client, *args, **kw)

        def counted_connect(connection: Any) -> None:
            calls.add(connections=1)
            connect(connection)

        rest.RESTClientObject.request = counted_request  # type: ignore[method-assign]
        HTTPConnection.connect = counted_connect  # type: ignore[method-assign]

    def add(self, *, requests: int = 0, connections: int = 0) -> None:
        if self.counting:
            with self._lock:
                self.requests += requests
                self.connections += connections

    @asynccontextmanager
    async def measuring(self, counter: Counter, settle: float) -> AsyncIterator[None]:
        """Count engine calls over the block and `settle` seconds after it (reads the API
        started in its threads may go on once a poll has answered); SQL over the block."""
        self.requests = self.connections = 0
        self.counting = True
        try:
            with counter.measuring():
                yield
            await asyncio.sleep(settle)
        finally:
            self.counting = False


def report_engine(name: str, calls: EngineCalls, operations: int) -> None:
    print(
        f"  {name}: {calls.requests / operations:.2f} REST requests to the engine, "
        f"{calls.connections / operations:.2f} new connections per operation"
    )


async def hatchet(counter: Counter, runs: int, settle: float) -> None:
    """The API's statements and engine calls per create and poll on Hatchet (see the module's
    docstring)."""
    import os
    import tempfile
    from pathlib import Path

    from benchmarks.durable.deployments import Process, environment
    from benchmarks.durable.lgos_runs import until_completed
    from lgos import ServerSettings
    from lgos.background.executor import DurableRuns, JobExecutor
    from lgos.integrations.hatchet import open_hatchet_client
    from lgos.server.app import import_factory, open_registry
    from lgos.server.resources import open_resources
    from lgos.wire import ids
    from tests.support.hatchet import running_engine

    calls = EngineCalls()
    calls.install()
    with (
        tempfile.TemporaryDirectory(prefix="lgos-statements-hatchet-") as state,
        running_engine(Path(state)) as engine_env,
        database() as uri,
    ):
        os.environ.update(engine_env)
        async with served(uri, "hatchet") as http:

            async def create(text: str) -> str:
                response = await http.post(
                    "/responses",
                    json={
                        "model": "background-mock",
                        "input": text,
                        "background": True,
                        "metadata": NO_DELAY,
                    },
                )
                return str(response.json()["id"])

            env = environment(
                LGOS_BACKGROUND="hatchet", LGOS_POSTGRES_URI=uri, LGOS_WORKER_ID="statements-0"
            )
            openai = AsyncOpenAI(
                base_url="http://lgos/v1", api_key="-", http_client=http, max_retries=0
            )

            async def worker_runs(batch: Callable[[], Awaitable[None]]) -> None:
                worker = Process(["worker", REGISTRY], env)
                try:
                    worker.wait_for(r'"message": "worker\.started"', timeout=300)
                    await until_completed(openai, await create("warm"))
                    await batch()
                finally:
                    worker.stop()

            async def nothing() -> None:
                pass

            # A worker declares the task to the engine (its REST view shows no run of a task
            # no worker declared), then stops: the runs created next stay queued.
            await worker_runs(nothing)
            async with calls.measuring(counter, settle):
                response_ids = [await create(f"poll {index}") for index in range(runs)]
            report("background create (Hatchet)", counter.counts, runs, counter.cpu_seconds)
            report_engine("create", calls, runs)

            async def poll_all(what: str, status: str) -> None:
                async with calls.measuring(counter, settle):
                    for response_id in response_ids:
                        poll = await http.get(f"/responses/{response_id}")
                        assert poll.json().get("status") == status, poll.text
                report(
                    f"background poll (Hatchet), {what}", counter.counts, runs, counter.cpu_seconds
                )
                report_engine("poll", calls, runs)

            await poll_all("run queued, just created", "queued")
            await poll_all("run queued, seen by the engine's REST view", "queued")
            # The runs' ends in the log, as their worker writes them (the engine, which
            # handed them to no worker, still has them queued).
            settings = ServerSettings(REGISTRY=REGISTRY, POSTGRES_URI=uri, BACKGROUND="hatchet")
            async with (
                open_resources(settings) as resources,
                open_hatchet_client(resources.events) as engine,
                open_registry(import_factory(REGISTRY), resources) as registry,
            ):
                executor = JobExecutor(
                    registry=registry,
                    durable=DurableRuns(resources.checkpointer, resources.run_coordinator),
                    events=resources.events,
                )
                for response_id in response_ids:
                    parsed = ids.parse_run_response_id(response_id)
                    assert parsed is not None
                    run = await engine.get(parsed.nonce)
                    assert run is not None
                    await executor(run.job, run.id)
            await poll_all("run ended (in the log)", "completed")

            # Whole runs: one `lgos worker` (which first returns the logged ends of the runs
            # above), each run created and polled every 10 ms.
            async def whole_runs() -> None:
                async with calls.measuring(counter, settle):
                    for index in range(runs):
                        await until_completed(openai, await create(f"run {index}"))
                report(
                    "background run (Hatchet), create + polls every 10 ms until completed",
                    counter.counts,
                    runs,
                    counter.cpu_seconds,
                )
                report_engine("run", calls, runs)

            await worker_runs(whole_runs)


async def main_async(runs: int, with_hatchet: bool, settle: float) -> None:
    counter = Counter()
    install(counter)
    if with_hatchet:
        await hatchet(counter, runs, settle)
        return
    await review(counter, runs)
    await background(counter, runs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument(
        "--hatchet", action="store_true", help="the API on Hatchet (instead of the rest)"
    )
    parser.add_argument(
        "--settle",
        type=float,
        default=5.0,
        help="seconds engine calls are still counted after each Hatchet batch",
    )
    args = parser.parse_args(argv)
    asyncio.run(main_async(args.runs, args.hatchet, args.settle))
    print(json.dumps({"runs": args.runs}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
