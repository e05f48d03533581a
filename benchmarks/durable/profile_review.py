"""Where a review round trip's CPU goes: LGOS beside LangGraph alone (issue 16; not a test).

    just bench-profile-review [--runs 60] [--passes 3]

Runs the foreground review round trip on the demo's `background-interrupt` graph (pause, then
the answer, to the final answer) in one process on a throwaway PostgreSQL database, under
py-spy, for each of:

- `lgos`: LGOS's app (PostgreSQL persistence, in-memory engine) through httpx's ASGI transport,
  so no socket or second process: the figure is the server's work plus httpx's client side;
- `floor`: the review floor, LangGraph alone pausing and resuming the same graph on
  `AsyncPostgresSaver` (`benchmarks.durable.floors.LangGraphFloors`).

Passes alternate between the two. Prints, per pass, each one's process CPU per round trip
and their ratio, then where LGOS's CPU goes (`benchmarks.foreground.profile.summarize` over
the measured round trips only, warm-up and set-up left out). CPU does not move with the
machine's load the way wall time does; the durable benchmark's ratio is of wall times, which add
the database's round trips (27 statements against the floor's 16, `benchmarks.durable.statements`).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.foreground.profile import summarize

RATE = 250  # samples per second
WARM_UP = 5
MEASURED = "benchmarks/durable/profile_review.py:measured"


async def _lgos(runs: int) -> float:
    from benchmarks.durable.deployments import database
    from benchmarks.durable.statements import review_round_trip, served

    with database() as uri:
        async with served(uri, "memory") as http:

            async def round_trip(index: int) -> None:
                await review_round_trip(http, index)

            for index in range(WARM_UP):
                await round_trip(index)
            return await measured(round_trip, runs)


async def _floor(runs: int) -> float:
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    from benchmarks.durable.deployments import database
    from benchmarks.durable.floors import LangGraphFloors

    with database() as uri:
        kwargs: dict[str, Any] = {
            "autocommit": True,
            "prepare_threshold": 0,
            "row_factory": dict_row,
        }
        async with AsyncConnectionPool(uri, kwargs=kwargs, open=False) as pool:
            from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver

            saver = AsyncPostgresSaver(pool)  # type: ignore[arg-type]
            await saver.setup()
            floors = LangGraphFloors(saver)
            await floors.review_round_trip(WARM_UP)

            async def round_trip(index: int) -> None:
                await floors.review_round_trip(1)

            return await measured(round_trip, runs)


async def measured(round_trip: Any, runs: int) -> float:
    """CPU seconds of this process over `runs` round trips (py-spy's stacks are kept for the
    frames under this function only)."""
    started = time.process_time()
    for index in range(runs):
        await round_trip(index)
    return time.process_time() - started


def _measured_stacks(raw: Path, kept: Path) -> None:
    lines = [line for line in raw.read_text().splitlines() if "measured (" in line]
    kept.write_text("\n".join(lines) + "\n")


def _profile(which: str, runs: int, scratch: Path, spy: str) -> tuple[float, Path]:
    raw = scratch / f"{which}-all.txt"
    child = [
        sys.executable,
        "-m",
        "benchmarks.durable.profile_review",
        "--child",
        which,
        "--runs",
        str(runs),
    ]
    record = [
        spy,
        "record",
        "--rate",
        str(RATE),
        "--format",
        "raw",
        "--nolineno",
        "--output",
        str(raw),
        "--",
    ]
    done = subprocess.run([*record, *child], capture_output=True, text=True, check=True)
    # py-spy prints its own lines on the same stdout.
    reported = next(line for line in done.stdout.splitlines() if line.startswith("{"))
    cpu = json.loads(reported)["cpu_seconds"]
    kept = scratch / f"{which}.txt"
    _measured_stacks(raw, kept)
    return cpu, kept


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.durable.profile_review", description=__doc__
    )
    parser.add_argument("--runs", type=int, default=60)
    parser.add_argument("--passes", type=int, default=3)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--child", choices=("lgos", "floor"), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        cpu = asyncio.run((_lgos if args.child == "lgos" else _floor)(args.runs))
        print(json.dumps({"cpu_seconds": cpu}))
        return 0
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    ratios = []
    with tempfile.TemporaryDirectory(prefix="lgos-profile-review-") as scratch:
        for number in range(1, args.passes + 1):
            lgos_cpu, lgos_stacks = _profile("lgos", args.runs, Path(scratch), spy)
            floor_cpu, _ = _profile("floor", args.runs, Path(scratch), spy)
            ratios.append(lgos_cpu / floor_cpu)
            print(
                f"pass {number}: CPU per round trip, LGOS {lgos_cpu / args.runs * 1000:.2f} ms, "
                f"floor {floor_cpu / args.runs * 1000:.2f} ms, ratio {ratios[-1]:.2f}x"
            )
        print(f"median ratio of CPU per round trip: {statistics.median(ratios):.2f}x\n")
        print("LGOS, last pass:")
        print(summarize(lgos_stacks, lgos_cpu, args.runs, "round trip", args.top, "lgos/"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
