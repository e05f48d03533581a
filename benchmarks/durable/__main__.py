"""The durable paths against their floors, measured side by side in one run (not a test).

    just bench-durable [--quick] [--engines memory,dbos,hatchet] [--out DIR]

Everything runs on this machine's PostgreSQL, each deployment on a throwaway database of its
own, as real processes on loopback (`deployments` starts them; the floors are in `floors`,
LGOS's side in `lgos_runs`, the report in `report`):

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

Webhook or poll (`webhooks`, after the rest, on deployments of its own with `LGOS_WEBHOOKS`):
the API's CPU per background run for a client that waits by webhook against one that polls
every 250 ms, on DBOS and Hatchet.

Every pass runs every measurement once, one after the other, so each ratio pairs figures
measured a few seconds apart; the report gives medians over passes.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from contextlib import ExitStack
from pathlib import Path

from benchmarks.common.machine import REPO, facts
from benchmarks.common.sizes import add_size_options, chosen_size
from benchmarks.durable.deployments import (
    database,
    dbos_url,
    engine_settings,
    environment,
    exported,
    lgos_deployment,
    started,
    stop_children_on_sigterm,
)
from benchmarks.durable.floor_worker import CHECKPOINT_URI_VARIABLE
from benchmarks.durable.floors import DBOSFloor, HatchetFloor, floor_workers
from benchmarks.durable.measure import MODES, measure
from benchmarks.durable.report import goals, markdown, plot
from benchmarks.durable.webhooks import WEBHOOK_RUNS
from benchmarks.durable.webhooks import markdown as webhooks_markdown
from benchmarks.durable.webhooks import run as webhooks_run


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.durable", description=__doc__)
    add_size_options(parser, quick="about 4 minutes")
    parser.add_argument("--engines", default="memory,dbos,hatchet")
    parser.add_argument(
        "--out", type=Path, default=REPO / "benchmarks" / ".results", help="report directory"
    )
    args = parser.parse_args(argv)
    stop_children_on_sigterm()
    mode = chosen_size(args)
    counts = MODES[mode]
    engines = [name.strip() for name in args.engines.split(",") if name.strip()]
    if not {"memory", "dbos"} <= set(engines):
        parser.error("memory and dbos are needed (foreground review, stream tail)")

    from dbos import DBOS

    began, load_before = time.time(), os.getloadavg()[0]
    with ExitStack() as stack:
        hatchet_env = stack.enter_context(
            engine_settings("hatchet" if "hatchet" in engines else "none")
        )
        # The floor's Hatchet client in this process, until the engine stops.
        stack.enter_context(exported(hatchet_env))
        deployments = {
            engine: stack.enter_context(lgos_deployment(engine, stack, hatchet_env))
            for engine in engines
        }
        floor_url = dbos_url(stack.enter_context(database()))
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

    durable_engines = [engine for engine in engines if engine != "memory"]
    webhook_runs = WEBHOOK_RUNS[mode]
    waits = webhooks_run(durable_engines, webhook_runs, passes=counts.passes)
    meta = facts(mode, time.time() - began, load_before)
    text = markdown(results, meta, counts) + webhooks_markdown(waits, webhook_runs)
    print(text)
    args.out.mkdir(parents=True, exist_ok=True)
    payload = {
        "meta": meta,
        "counts": counts.__dict__,
        "passes": results.passes,
        "cpu_ms_per_run": results.cpu,
        "medians": {name: results.median(name) for name in results.passes},
        "stream_tail_samples_ms": results.tail_samples,
        "webhook_or_poll": waits,
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
