"""Background Responses: latency and throughput per engine, LGOS alone (a measurement, not a test).

    uv run --with-requirements benchmarks/requirements.txt \\
        python -m benchmarks.durable.background [--runs 30] [--burst 200]

For each engine it starts real processes on loopback (the in-memory engine: one `lgos serve`;
DBOS: one `lgos serve` and two `lgos worker` on a throwaway PostgreSQL database; Hatchet: the
same, plus a Hatchet engine built by `just setup` and started by scripts/hatchet-bootstrap.sh on
a database of its own) serving the demo registry, then measures with the official SDK:

- latency: the median time from `create` to the first poll that sees `completed`, for
  `background-mock` with `delay_seconds: 0`, one run at a time (polling every 10 ms);
- throughput: `--burst` runs created at once (16 creates in flight), each then polled every
  250 ms until completed; runs per second = burst / (last completion - first create).

`just bench-durable` measures the same paths beside their floors; this is the quick look.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
from contextlib import ExitStack

from openai import AsyncOpenAI

from benchmarks.durable.deployments import (
    engine_settings,
    lgos_deployment,
    stop_children_on_sigterm,
)
from benchmarks.durable.lgos_runs import latencies, lgos_burst


async def measure(base_url: str, runs: int, burst: int) -> dict[str, float]:
    async with AsyncOpenAI(base_url=f"{base_url}/v1", api_key="bench", max_retries=0) as client:
        await latencies(client, 3)  # warm-up: imports, pools, first queue poll
        seconds = await latencies(client, runs)
        rate = await lgos_burst(client, burst)
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
        with ExitStack() as stack:
            settings = stack.enter_context(engine_settings(engine))
            deployment = stack.enter_context(lgos_deployment(engine, stack, settings))
            results[engine] = asyncio.run(measure(deployment.base_url, args.runs, args.burst))
        print(engine, json.dumps(results[engine]), flush=True)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
