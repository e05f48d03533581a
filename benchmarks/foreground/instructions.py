"""What each LGOS feature costs per request, in CPU instructions counted by Callgrind.

    uv run --with-requirements benchmarks/requirements.txt \
        python -m benchmarks.foreground.instructions [--requests 100] [--only FEATURE...]

The same batches as `features.py` (bare, LGOS whole, LGOS with one feature switched off, `echo`
requests through the ASGI apps in one process), run once under `valgrind --tool=callgrind`,
which counts the instructions the process executes: a figure the machine's load cannot move,
weighted as the CPU weighs the work (a call counted by `features.py --calls` can cost ten
instructions or ten thousand). Kernel time (a log line's write) is not counted.
`--cache-sim` adds Valgrind's simulated caches: L1 instruction and data misses per request
(about twice as slow again). Its model is simple (the host's cache sizes, no prefetch, no
other process), so read its misses as a second opinion on the footprint, not as time.

Callgrind's counters are zeroed before each batch and written after it by its client requests,
reached through a five-line C helper compiled here with `cc` (valgrind's headers are needed).
About 50 times slower than running natively: a run of the defaults takes 20 to 40 minutes.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import ctypes
import logging
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


# About how much slower a request runs under Callgrind than natively.
SLOWDOWN = 50


def _hold_records_as_natively() -> None:
    """`lgos serve`'s handler writes the requests' records together every `flush_seconds` of
    wall-clock time: about 70 requests' records per write natively, but one per write under
    Callgrind, where a request takes 50 times as long. Stretched by the slowdown, the write
    (and its timer) is shared by as many requests as natively, so the request record is
    charged what it costs a server."""
    from lgos.server.logging import StdoutHandler

    for handler in logging.getLogger().handlers:
        if isinstance(handler, StdoutHandler):
            handler.flush_seconds *= SLOWDOWN


async def _batches(args: argparse.Namespace, helper: Any, log_file: Any) -> None:
    """Inside Callgrind: each batch between a zero and a dump labelled `api|label|requests`."""
    chosen = [f for f in features.FEATURES if not args.only or f.name in args.only]
    async with features.started_apps(log_file, args.warmup, 1) as apps:
        _hold_records_as_natively()
        helper.dump(b"start-up")  # everything before the first batch, out of its figures
        for api in features.PATHS:
            for label, app, feature in features.batches(api, apps, chosen):
                with feature.switch_off() if feature else contextlib.nullcontext():
                    await features._batch(app, api, 20, 1)  # the batch's own first-call paths
                    helper.zero()
                    await features._batch(app, api, args.requests, 1)
                    helper.dump(f"{api}|{label}|{args.requests}".encode())


# Valgrind's names of the L1 misses its cache simulation counts (instruction reads, data
# reads, data writes).
L1_MISSES = ("I1mr", "D1mr", "D1mw")


def _read_dumps(prefix: Path) -> dict[str, dict[str, dict[str, float]]]:
    """Each batch's events per request (`Ir`: instructions; with the cache simulation, its
    misses too), per API, from Callgrind's dump files."""
    results: dict[str, dict[str, dict[str, float]]] = {}
    for path in prefix.parent.glob(prefix.name + ".*"):
        text = path.read_text(errors="replace")
        label = re.search(r"^desc: Trigger: Client Request: (.+)$", text, re.MULTILINE)
        names = re.search(r"^events: (.+)$", text, re.MULTILINE)
        totals = re.search(r"^summary: (.+)$", text, re.MULTILINE)
        if label is None or names is None or totals is None or "|" not in label.group(1):
            continue
        api, name, requests = label.group(1).split("|")
        # Not strict: Callgrind leaves trailing zero counts out of the summary line.
        counts = dict(zip(names.group(1).split(), map(int, totals.group(1).split()), strict=False))
        results.setdefault(api, {})[name] = {
            event: count / int(requests) for event, count in counts.items()
        }
    return results


def _report(results: dict[str, dict[str, dict[str, float]]], args: argparse.Namespace) -> str:
    caches = args.cache_sim
    lines = [
        f"in-process, `echo`, concurrency 1, {args.requests} requests per batch; instructions "
        "per request (Callgrind, thousands)"
        + ("; L1 misses per request (instruction and data, simulated)" if caches else ""),
        "",
        "| api | batch | instructions / request | lgos − this batch | this ÷ bare |"
        + (" L1 misses / request | this ÷ bare |" if caches else ""),
        "| --- | --- | ---: | ---: | ---: |" + (" ---: | ---: |" if caches else ""),
    ]
    for api in features.PATHS:
        row = results.get(api, {})
        if "lgos" not in row or "bare" not in row:
            continue
        for label in ["bare", "lgos", *(f.name for f in features.FEATURES)]:
            if label not in row:
                continue
            value, lgos, bare = row[label]["Ir"], row["lgos"]["Ir"], row["bare"]["Ir"]
            saved = "–" if label == "lgos" else f"{(lgos - value) / 1e3:+.0f}k"
            line = f"| {api} | {label} | {value / 1e3:.0f}k | {saved} | {value / bare:.3f}× |"
            if caches:
                misses = sum(row[label].get(event, 0) for event in L1_MISSES)
                floor = sum(row["bare"].get(event, 0) for event in L1_MISSES)
                line += f" {misses / 1e3:.1f}k | {misses / floor:.3f}× |"
            lines.append(line)
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.foreground.instructions")
    parser.add_argument("--requests", type=int, default=100, help="per batch")
    parser.add_argument("--warmup", type=int, default=60)
    parser.add_argument("--only", nargs="*", default=[], help="feature names to switch off")
    parser.add_argument(
        "--cache-sim", action="store_true", help="also count simulated L1 cache misses"
    )
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
                    *(["--cache-sim=yes"] if args.cache_sim else []),
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
