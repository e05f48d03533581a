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
  not counted.

Prints the statements per operation, grouped by their first words, and this process's CPU
time per operation (the HTTP client's included: compare versions, not with other figures).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import re
import time
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import httpx
import psycopg

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


async def review(counter: Counter, runs: int) -> None:
    with database() as uri:
        async with served(uri, "memory") as http:
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


async def main_async(runs: int) -> None:
    counter = Counter()
    install(counter)
    await review(counter, runs)
    await background(counter, runs)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    args = parser.parse_args(argv)
    asyncio.run(main_async(args.runs))
    print(json.dumps({"runs": args.runs}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
