"""Where LGOS's Python work per request is, function by function, against bare.

    uv run python -m benchmarks.foreground.opcodes [--requests 50] [--top 40] [--client-headers]

The same `echo` requests as `features.py` (concurrency 1, through the ASGI apps in one
process), traced with `sys.settrace`: every bytecode instruction the interpreter runs is
counted against the Python function running it. The table is LGOS's count less bare's, per
function, per request; the first line of each API gives both totals. Bytecode instructions
are not CPU time (a C call is one instruction, whatever it costs, and the interpreter's own
work between instructions is not in them), but the count is exact and the load cannot move
it, so it says which of LGOS's functions still do the most work. `--client-headers` adds the
headers the benchmark's client (aiohttp) sends besides the driver's three.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import os
import sys
import tempfile
from collections.abc import Awaitable, Callable
from typing import Any

from benchmarks.foreground import features

CLIENT_HEADERS = [
    (b"accept", b"*/*"),
    (b"accept-encoding", b"gzip, deflate"),
    (b"user-agent", b"Python/3.11 aiohttp/3.14.5"),
]
ASGIApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


def _with_client_headers(app: ASGIApp) -> ASGIApp:
    async def sent_by_aiohttp(scope: dict[str, Any], receive: Any, send: Any) -> None:
        scope["headers"] = scope["headers"][:1] + CLIENT_HEADERS + scope["headers"][1:]
        await app(scope, receive, send)

    return sent_by_aiohttp


def _name(code: Any) -> str:
    filename = code.co_filename.split("site-packages/")[-1].replace(os.getcwd() + os.sep, "")
    return f"{filename}:{code.co_name}"


async def _count(app: ASGIApp, api: str, requests: int) -> collections.Counter[str]:
    counts: collections.Counter[str] = collections.Counter()

    def tracer(frame: Any, event: str, arg: Any) -> Any:
        frame.f_trace_opcodes = True
        name = _name(frame.f_code)

        def each(frame: Any, event: str, arg: Any) -> Any:
            if event == "opcode":
                counts[name] += 1
            return each

        return each

    sys.settrace(tracer)
    try:
        await features._batch(app, api, requests, 1)
    finally:
        sys.settrace(None)
    return counts


async def _run(args: argparse.Namespace, log_file: Any) -> str:
    lines: list[str] = []
    async with features.started_apps(log_file, args.warmup, 1) as apps:
        for api in features.PATHS:
            chosen = {name: apps[name] for name in ("bare", "lgos")}
            if args.client_headers:
                chosen = {name: _with_client_headers(app) for name, app in chosen.items()}
            bare = await _count(chosen["bare"], api, args.requests)
            lgos = await _count(chosen["lgos"], api, args.requests)
            per = args.requests
            lines.append(
                f"{api}: bytecode instructions per request, bare {sum(bare.values()) / per:,.0f}, "
                f"lgos {sum(lgos.values()) / per:,.0f}"
            )
            excess = {name: (lgos[name] - bare[name]) / per for name in bare.keys() | lgos.keys()}
            ranked = sorted(excess.items(), key=lambda item: -abs(item[1]))
            lines += [f"  {value:+8.1f}  {name}" for name, value in ranked[: args.top] if value]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.foreground.opcodes")
    parser.add_argument("--requests", type=int, default=50, help="per batch")
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--top", type=int, default=40, help="functions shown per API")
    parser.add_argument("--client-headers", action="store_true")
    args = parser.parse_args(argv)
    with tempfile.TemporaryFile("w") as log_file:
        print(asyncio.run(_run(args, log_file)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
