"""Where one background run's time goes, run by run (not a test).

    uv run --with-requirements benchmarks/requirements.txt \\
        python -m benchmarks.durable.trace dbos|hatchet [--runs 10]

Starts one LGOS deployment of the engine (as `just bench-durable` does: `lgos serve` and two
`lgos worker` on a throwaway database), creates `background-mock` runs one at a time and
polls each every 10 ms, and prints per run: when the create returned, when each status was
first seen and how many polls it took. For DBOS it also reads the run's own timestamps from
`dbos.workflow_status` (enqueued, dequeued by a worker, completed), all in ms from the moment
the client sent the create.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from contextlib import ExitStack

import psycopg
from openai import AsyncOpenAI

from benchmarks.durable.deployments import (
    engine_settings,
    lgos_deployment,
    stop_children_on_sigterm,
)
from benchmarks.durable.lgos_runs import create
from benchmarks.durable.timing import POLL_SECONDS
from lgos.wire import ids


async def one(client: AsyncOpenAI, engine: str, uri: str, index: int) -> float:
    started = time.perf_counter()
    sent_at_ms = time.time() * 1000
    response_id = await create(client, f"trace {index}")
    created = (time.perf_counter() - started) * 1000
    seen: dict[str, float] = {}
    polls = 0
    while True:
        status = (await client.responses.retrieve(response_id)).status
        polls += 1
        seen.setdefault(str(status), (time.perf_counter() - started) * 1000)
        if status == "completed":
            break
        if status not in ("queued", "in_progress"):
            raise RuntimeError(f"{response_id} ended {status}")
        await asyncio.sleep(POLL_SECONDS)
    line = f"create returned {created:.0f}; first seen: " + ", ".join(
        f"{status} {ms:.0f}" for status, ms in seen.items()
    )
    line += f"; {polls} polls"
    if engine == "dbos":
        parsed = ids.parse_run_response_id(response_id)
        assert parsed is not None
        async with await psycopg.AsyncConnection.connect(uri) as conn:
            cursor = await conn.execute(
                "SELECT created_at, started_at_epoch_ms, coalesce(completed_at, updated_at) "
                "FROM dbos.workflow_status WHERE workflow_uuid = %s",
                (parsed.nonce,),
            )
            row = await cursor.fetchone()
        assert row is not None
        enqueued, dequeued, completed = (value - sent_at_ms for value in row)
        line += f"; DBOS: enqueued {enqueued:.0f}, dequeued {dequeued:.0f}, done {completed:.0f}"
    print(line, flush=True)
    return seen["completed"]


async def trace(base_url: str, engine: str, uri: str, runs: int) -> None:
    client = AsyncOpenAI(base_url=f"{base_url}/v1", api_key="trace", max_retries=0)
    try:
        for index in range(3):  # warm-up
            await one(client, engine, uri, index)
        print("--", flush=True)
        completed = [await one(client, engine, uri, index) for index in range(runs)]
        print(f"median create → completed seen: {statistics.median(completed):.0f} ms")
    finally:
        await client.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("engine", choices=["dbos", "hatchet"])
    parser.add_argument("--runs", type=int, default=10)
    args = parser.parse_args(argv)
    stop_children_on_sigterm()
    with ExitStack() as stack:
        settings = stack.enter_context(engine_settings(args.engine))
        deployment = stack.enter_context(lgos_deployment(args.engine, stack, settings))
        asyncio.run(trace(deployment.base_url, args.engine, deployment.uri, args.runs))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
