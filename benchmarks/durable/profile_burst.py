"""Where a background burst's CPU goes in LGOS's API and in one worker, per engine (not a test).

    just bench-profile-burst [dbos|hatchet] [--bursts 3] [--size 60] [--top 30] [--stream]

Starts one LGOS deployment of the engine as `just bench-durable` does (`lgos serve` and two
`lgos worker` on a throwaway database), warms it with one burst, then records the API and
the first worker with `py-spy record --gil` (on-CPU Python only, their child processes
included) while `--bursts` bursts of `--size` `background-mock` runs go through (16 creates
in flight, each run polled every 250 ms, as in `just bench-durable`; with `--stream` each run
created with `stream` and followed to its end, as the Hatchet goals are measured). Prints, per
process, its CPU per run (user + system, kernel accounting) shared out by py-spy's samples: by
package, by function, and LGOS's functions by inclusive time. The worker's figure divides by
half the runs (two workers share them), so read it as an estimate.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable
from contextlib import ExitStack
from pathlib import Path

from openai import AsyncOpenAI

from benchmarks.durable.deployments import (
    cpu_seconds,
    engine_settings,
    exported,
    lgos_deployment,
    stop_children_on_sigterm,
)
from benchmarks.durable.lgos_runs import lgos_burst, lgos_burst_streamed
from benchmarks.foreground.profile import summarize

RATE = 200  # samples per second


def _spy(pid: int, raw: Path) -> subprocess.Popen[bytes]:
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    command = [spy, "record", "--pid", str(pid), "--rate", str(RATE), "--gil", "--subprocesses"]
    command += ["--format", "raw", "--nolineno", "--output", str(raw)]
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


async def _bursts(
    base_url: str, bursts: int, size: int, started: Callable[[], None], stream: bool
) -> None:
    burst = lgos_burst_streamed if stream else lgos_burst
    async with AsyncOpenAI(base_url=f"{base_url}/v1", api_key="bench", max_retries=0) as client:
        await burst(client, size)  # warm-up, not recorded
        started()
        for _ in range(bursts):
            await burst(client, size)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.durable.profile_burst", description=__doc__
    )
    parser.add_argument("engine", nargs="?", default="hatchet", choices=["dbos", "hatchet"])
    parser.add_argument("--bursts", type=int, default=3)
    parser.add_argument("--size", type=int, default=60)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--stream", action="store_true", help="streamed runs (the Hatchet goals)")
    args = parser.parse_args(argv)
    stop_children_on_sigterm()
    runs = args.bursts * args.size
    with ExitStack() as stack, tempfile.TemporaryDirectory() as scratch:
        settings = stack.enter_context(engine_settings(args.engine))
        stack.enter_context(exported(settings))
        deployment = stack.enter_context(lgos_deployment(args.engine, stack, settings))
        processes = {"API": deployment.processes[0], "one worker": deployment.processes[1]}
        raws = {name: Path(scratch) / f"{index}.raw" for index, name in enumerate(processes)}
        spies: list[subprocess.Popen[bytes]] = []
        used: dict[str, float] = {}

        def start() -> None:
            # After the warm-up: py-spy samples, and CPU is counted, from here.
            for name, process in processes.items():
                spies.append(_spy(process.popen.pid, raws[name]))
                used[name] = cpu_seconds([process])

        asyncio.run(_bursts(deployment.base_url, args.bursts, args.size, start, args.stream))
        used = {name: cpu_seconds([p]) - used[name] for name, p in processes.items()}
        for spy in spies:
            spy.send_signal(signal.SIGINT)  # py-spy writes its file as it stops
        for spy in spies:
            spy.wait(60)
        print(f"{args.engine}: {args.bursts} bursts of {args.size} runs")
        for name, raw in raws.items():
            units = runs if name == "API" else runs // 2
            print(f"\n== {name}: {used[name] * 1000 / units:.1f} ms of CPU per run")
            print(summarize(raw, used[name], units, "run", args.top, "lgos/"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
