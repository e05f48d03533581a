"""Profile one target under load with py-spy and print where its CPU time goes.

    uv run --with-requirements benchmarks/requirements.txt --with py-spy \\
        python -m benchmarks.foreground.profile --target lgos --scenario "chat c32" --seconds 20

Prints, per request (or per 1000-chunk stream): own time by package, the top functions by own
time, and the inclusive time of the target's own functions. Milliseconds are the server's CPU
time (kernel accounting) shared out by py-spy's sample counts: on a busy machine the samples
alone overstate it. `--raw FILE` keeps py-spy's collapsed stacks for a flame graph (speedscope
or inferno read them); `--callees NAME` breaks down what a function calls. `--lines` tells a
function's lines apart (`path:line:function`), and `--rate 1000` takes ten times the samples,
at some cost to the server: both for finding the line a few microseconds go to.
"""

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks.common.machine import REPO
from benchmarks.foreground import load, targets
from benchmarks.foreground.__main__ import SCENARIOS

RATE = 100  # samples per second
# Leaf frames of threads that wait rather than run: py-spy cannot always tell them apart.
IDLE = {
    "stdlib/threading.py:Condition.wait",
    "stdlib/concurrent/futures/thread.py:_worker",
    "stdlib/selectors.py:EpollSelector.select",
    "stdlib/queue.py:Queue.get",
}


def _short(frame: str) -> str:
    """`function (path/to/file.py)` -> `package/file.py:function` (with `--lines`,
    `package/file.py:line:function`), without machine paths."""
    function, _, location = frame.rpartition(" (")
    location = location.rstrip(")")
    for marker in ("site-packages/", str(REPO) + "/", "lib/python3."):
        if marker in location:
            location = location.split(marker, 1)[1]
            if marker == "lib/python3.":
                location = "stdlib/" + location.split("/", 1)[-1]
            break
    return f"{location}:{function}"


def _package(frame: str) -> str:
    location = frame.split(":", 1)[0]
    return location.split("/", 1)[0] if "/" in location else location


def _stacks(raw: Path) -> list[tuple[list[str], int]]:
    """py-spy's collapsed stacks as (frames, samples), idle threads left out."""
    stacks = []
    for line in raw.read_text().splitlines():
        stack, _, count = line.rpartition(" ")
        frames = [_short(f) for f in stack.split(";") if " (" in f]
        if frames and frames[-1] not in IDLE:
            stacks.append((frames, int(count)))
    return stacks


def callees(raw: Path, per_sample: float, unit: str, function: str, top: int) -> str:
    """Inclusive time of the functions called directly by frames whose name contains `function`."""
    children: Counter[str] = Counter()
    for frames, count in _stacks(raw):
        for index, frame in enumerate(frames):
            if function in frame:
                child = frames[index + 1] if index + 1 < len(frames) else "(own time)"
                children[child] += count
                break
    lines = [f"called by {function} (per {unit}):"]
    lines += [f"  {n * per_sample:8.3f} ms  {name}" for name, n in children.most_common(top)]
    return "\n".join(lines)


def summarize(raw: Path, cpu: float, units: int, unit: str, top: int, focus: str) -> str:
    own: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    packages: Counter[str] = Counter()
    total = 0
    for frames, count in _stacks(raw):
        total += count
        own[frames[-1]] += count
        packages[_package(frames[-1])] += count
        for frame in set(frames):
            inclusive[frame] += count

    def per_unit(samples: int) -> str:
        return f"{samples / total * cpu / units * 1000:8.3f} ms"

    lines = [
        f"{total} samples; the server used {cpu:.2f} s of CPU for {units} {unit}s "
        f"= {cpu / units * 1000:.3f} ms per {unit}, shared out below by sample counts",
        "",
        f"own time by package (per {unit}):",
    ]
    lines += [f"  {per_unit(n)}  {n / total:6.1%}  {name}" for name, n in packages.most_common(top)]
    lines += ["", f"top functions by own time (per {unit}):"]
    lines += [f"  {per_unit(n)}  {n / total:6.1%}  {name}" for name, n in own.most_common(top)]
    lines += ["", f"{focus} functions by inclusive time (per {unit}):"]
    mine = Counter({name: n for name, n in inclusive.items() if name.startswith(focus)})
    lines += [f"  {per_unit(n)}  {n / total:6.1%}  {name}" for name, n in mine.most_common(top)]
    return "\n".join(lines)


async def _drive(target: targets.Target, scenario: load.Scenario, seconds: float) -> int:
    async with load.session(limit=128) as session:
        await load.run_batch(session, target.url, scenario, 20 if not scenario.stream else 2)
        sent = 0
        deadline = time.monotonic() + seconds
        batch = 5 if scenario.stream else 200
        while time.monotonic() < deadline:
            await load.run_batch(session, target.url, scenario, batch)
            sent += batch
        return sent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.foreground.profile", description=__doc__
    )
    parser.add_argument("--target", default="lgos", choices=("bare", "lgos", "reference"))
    parser.add_argument("--scenario", default="chat c32", choices=[s.name for s in SCENARIOS])
    parser.add_argument("--seconds", type=float, default=20)
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--raw", type=Path, help="keep py-spy's collapsed stacks here")
    parser.add_argument("--rate", type=int, default=RATE, help="samples per second")
    parser.add_argument(
        "--lines", action="store_true", help="tell a function's lines apart (file:line)"
    )
    parser.add_argument(
        "--callees",
        action="append",
        default=[],
        metavar="FUNCTION",
        help="also break down what frames named like this call (repeatable)",
    )
    args = parser.parse_args(argv)
    spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    scenario = next(s for s in SCENARIOS if s.name == args.scenario)
    server_core, client_core = targets.cores()
    target = targets.Target(args.target, targets.commands([args.target])[args.target], server_core)
    with tempfile.TemporaryDirectory(prefix="lgos-profile-") as scratch:
        raw = args.raw or Path(scratch) / "stacks.txt"
        target.start(Path(scratch))
        try:
            target.wait_ready()
            if client_core is not None:
                os.sched_setaffinity(0, {client_core})
            time.sleep(1)
            assert target.process is not None
            record = ["record", "--pid", str(target.process.pid), "--rate", str(args.rate)]
            options = ["--nonblocking", "--format", "raw", "--output", str(raw)]
            if not args.lines:
                options.append("--nolineno")
            duration = ["--duration", str(int(args.seconds) + 2)]
            recorder = subprocess.Popen(
                [spy, *record, *options, *duration], stdout=subprocess.DEVNULL
            )
            time.sleep(1)
            before = target.cpu_seconds()
            units = asyncio.run(_drive(target, scenario, args.seconds))
            cpu = target.cpu_seconds() - before
            recorder.wait()
        finally:
            target.stop()
        unit = "stream" if scenario.stream else "request"
        print(f"{args.target} / {scenario.name}:")
        focus = {
            "bare": "benchmarks/foreground/",
            "lgos": "lgos/",
            "reference": "langgraph_openai_serve/",
        }
        print(summarize(raw, cpu, units, unit, args.top, focus[args.target]))
        per_sample = cpu / units * 1000 / max(1, sum(n for _, n in _stacks(raw)))
        for function in args.callees:
            print()
            print(callees(raw, per_sample, unit, function, args.top))
    return 0


if __name__ == "__main__":
    sys.exit(main())
