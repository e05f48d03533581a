"""What each LGOS feature costs per request, in CPU instructions counted by Callgrind.

    uv run --with-requirements benchmarks/requirements.txt \
        python -m benchmarks.foreground.instructions [--requests 100] [--only FEATURE...]

The same batches as `features.py` (bare, LGOS whole, LGOS with one feature switched off, `echo`
requests through the ASGI apps in one process), run once under `valgrind --tool=callgrind`,
which counts the instructions the process executes: a figure the machine's load cannot move,
weighted as the CPU weighs the work (a call counted by `features.py --calls` can cost ten
instructions or ten thousand). Kernel time (a log line's write) is not counted.

Callgrind's counters are zeroed before each batch and written after it by its client requests,
reached through a five-line C helper compiled here with `cc` (valgrind's headers are needed).
About 50 times slower than running natively: a run of the defaults takes 20 to 40 minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.foreground import features

_HELPER = """
#include <valgrind/callgrind.h>
void zero(void) { CALLGRIND_ZERO_STATS; }
void dump(const char *label) { CALLGRIND_DUMP_STATS_AT(label); }
"""


def _compile_helper(directory: Path) -> Path:
    source = directory / "callgrind_requests.c"
    source.write_text(_HELPER)
    library = directory / "callgrind_requests.so"
    subprocess.run(["cc", "-O2", "-shared", "-fPIC", "-o", library, source], check=True)
    return library


async def _batches(args: argparse.Namespace, helper: Any, log_file: Any) -> None:
    """Inside Callgrind: each batch between a zero and a dump labelled `api|label|requests`."""
    chosen = [f for f in features.FEATURES if not args.only or f.name in args.only]
    async with features.started_apps(log_file, args.warmup, 1) as apps:
        helper.dump(b"start-up")  # everything before the first batch, out of its figures
        for api in features.PATHS:
            for label, app, feature in features.batches(api, apps, chosen):
                with feature.switch_off() if feature else contextlib.nullcontext():
                    await features._batch(app, api, 20, 1)  # the batch's own first-call paths
                    helper.zero()
                    await features._batch(app, api, args.requests, 1)
                    helper.dump(f"{api}|{label}|{args.requests}".encode())


def _read_dumps(prefix: Path) -> dict[str, dict[str, float]]:
    """Instructions per request of each batch, per API, from Callgrind's dump files."""
    results: dict[str, dict[str, float]] = {}
    for path in prefix.parent.glob(prefix.name + ".*"):
        text = path.read_text(errors="replace")
        label = re.search(r"^desc: Trigger: Client Request: (.+)$", text, re.MULTILINE)
        total = re.search(r"^summary: (\d+)$", text, re.MULTILINE)
        if label is None or total is None or "|" not in label.group(1):
            continue
        api, name, requests = label.group(1).split("|")
        results.setdefault(api, {})[name] = int(total.group(1)) / int(requests)
    return results


def _report(results: dict[str, dict[str, float]], args: argparse.Namespace) -> str:
    lines = [
        f"in-process, `echo`, concurrency 1, {args.requests} requests per batch; instructions "
        "per request (Callgrind, thousands)",
        "",
        "| api | batch | instructions / request | lgos − this batch | this ÷ bare |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for api in features.PATHS:
        row = results.get(api, {})
        if "lgos" not in row or "bare" not in row:
            continue
        for label in ["bare", "lgos", *(f.name for f in features.FEATURES)]:
            if label not in row:
                continue
            value = row[label]
            saved = "–" if label == "lgos" else f"{(row['lgos'] - value) / 1e3:+.0f}k"
            lines.append(
                f"| {api} | {label} | {value / 1e3:.0f}k | {saved} | {value / row['bare']:.3f}× |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.foreground.instructions")
    parser.add_argument("--requests", type=int, default=100, help="per batch")
    parser.add_argument("--warmup", type=int, default=60)
    parser.add_argument("--only", nargs="*", default=[], help="feature names to switch off")
    parser.add_argument("--inside", help=argparse.SUPPRESS)  # the helper, under Callgrind
    args = parser.parse_args(argv)
    if args.inside:
        helper = ctypes.CDLL(args.inside)
        with tempfile.TemporaryFile("w") as log_file:
            asyncio.run(_batches(args, helper, log_file))
        return 0
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        print("valgrind is not installed", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as directory:
        helper_path = _compile_helper(Path(directory))
        prefix = Path(directory) / "callgrind.out"
        own = [f"--requests={args.requests}", f"--warmup={args.warmup}"]
        if args.only:
            own += ["--only", *args.only]
        log = Path(directory) / "valgrind.log"
        with log.open("w") as errors:
            measured = subprocess.run(
                [
                    valgrind,
                    "--tool=callgrind",
                    f"--callgrind-out-file={prefix}",
                    sys.executable,
                    "-m",
                    "benchmarks.foreground.instructions",
                    f"--inside={helper_path}",
                    *own,
                ],
                stdout=subprocess.DEVNULL,
                stderr=errors,
                env={**os.environ, "PYTHONHASHSEED": "0"},  # the same dict layouts every run
            )
        if measured.returncode != 0:
            print(log.read_text()[-3000:], file=sys.stderr)
            return measured.returncode
        print(_report(_read_dumps(prefix), args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
