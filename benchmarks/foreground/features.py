"""What each LGOS feature costs per request, in one process, through the ASGI apps.

    uv run python -m benchmarks.foreground.features [--requests 1000] [--passes 5]

Runs `echo` requests (Chat Completions and Responses, one at a time or `--concurrency` at once)
straight into the ASGI apps: no sockets, no HTTP parser, no Uvicorn, so every microsecond of
CPU is the application's (Uvicorn and h11 cost both servers the same). Each pass measures, batch
by batch and back to back, the bare app (`bare.py`), LGOS whole, and LGOS with one feature
switched off; the table gives the median over passes of `whole − switched off` (what the
feature costs) and of `whole − bare`, in µs of process CPU per request. Pairing batch by batch
cancels the slow drifts of a shared machine; read differences under ~20 µs as noise.
`--calls` counts function calls (Python and C) per request instead: a measure the machine's
load cannot move, which tells where work was added or removed, not what it costs in time.

LGOS logs as `lgos serve` does (JSON records at INFO), to a temporary file, as the benchmark's
servers log to theirs. Switching a feature off patches LGOS for that batch only; the patches
are in `FEATURES` and take away work, never behaviour a batch's requests can see.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import logging
import logging.config
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any

from benchmarks.foreground import bare, graphs
from benchmarks.foreground.load import PROMPT

ASGIApp = Callable[[dict[str, Any], Any, Any], Awaitable[None]]


# --- the requests ------------------------------------------------------------------------


def _body(api: str) -> bytes:
    if api == "chat":
        payload: dict[str, Any] = {
            "model": "echo",
            "messages": [{"role": "user", "content": PROMPT}],
        }
    else:
        payload = {"model": "echo", "input": PROMPT}
    payload["stream"] = False
    return json.dumps(payload).encode()


PATHS = {"chat": "/v1/chat/completions", "responses": "/v1/responses"}


async def _request(app: ASGIApp, path: str, body: bytes) -> None:
    """One POST as Uvicorn hands it to the app; fails unless the reply is a 200 that echoes."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0", "spec_version": "2.3"},
        "http_version": "1.1",
        "server": ("127.0.0.1", 8000),
        "client": ("127.0.0.1", 50000),
        "scheme": "http",
        "method": "POST",
        "root_path": "",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "headers": [
            (b"host", b"127.0.0.1:8000"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(body)).encode()),
        ],
        "state": {},
    }
    sent = False

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            await asyncio.Event().wait()  # a kept-alive client that sends nothing more
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    status = 0
    reply = bytearray()

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            reply.extend(message.get("body", b""))

    await app(scope, receive, send)
    if status != 200 or PROMPT.encode() not in reply:
        raise RuntimeError(f"{path} answered {status}: {bytes(reply[:300])!r}")


async def _batch(
    app: ASGIApp, api: str, requests: int, concurrency: int, *, count_calls: bool = False
) -> float:
    """Process CPU seconds per request over `requests` requests, `concurrency` in flight; with
    `count_calls`, the function calls (Python and C) per request instead."""
    path, body = PATHS[api], _body(api)
    remaining = requests
    calls = 0

    def count(frame: Any, event: str, arg: Any) -> None:
        nonlocal calls
        if event == "call" or event == "c_call":
            calls += 1

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            await _request(app, path, body)

    started = time.process_time()
    if count_calls:
        sys.setprofile(count)
    try:
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    finally:
        sys.setprofile(None)
    if count_calls:
        return calls / requests
    return (time.process_time() - started) / requests


# --- the features ------------------------------------------------------------------------


@contextlib.contextmanager
def _patched(target: Any, name: str, value: Any) -> Iterator[None]:
    original = getattr(target, name)
    setattr(target, name, value)
    try:
        yield
    finally:
        setattr(target, name, original)


@contextlib.contextmanager
def _no_request_record() -> Iterator[None]:
    """The request's log record (the response is sent as it is, unobserved). Both paths of
    `Guarded`: most replies (JSON and event streams) call `log_request` once sent, without
    `send_logged`'s send wrapper."""
    from lgos.http import routes

    async def unlogged(response: Any, scope: Any, receive: Any, send: Any, **options: Any) -> None:
        await response(scope, receive, send)

    def unrecorded(*args: Any) -> None:
        pass

    with _patched(routes, "send_logged", unlogged), _patched(routes, "log_request", unrecorded):
        yield


@contextlib.contextmanager
def _no_json_limits() -> Iterator[None]:
    """`safe_json.loads` (hooks and the limits walk) as plain `json.loads`."""
    from lgos.core import safe_json

    with _patched(safe_json, "loads", json.loads):
        yield


@contextlib.contextmanager
def _no_body_timeout() -> Iterator[None]:
    """The body read with its size and time limits, as Starlette's plain `request.body()`."""
    from lgos.http import body

    async def read_body(request: Any, limits: Any) -> bytes:
        return await request.body()  # type: ignore[no-any-return]

    with _patched(body, "read_body", read_body):
        yield


@contextlib.contextmanager
def _no_workflow_span() -> Iterator[None]:
    """The OpenTelemetry `invoke_workflow` span and duration histogram."""
    from lgos.run import runner

    class Untraced:
        context = None  # no context to attach around the run's steps

        def __init__(self, model: str, conversation_id: str | None) -> None:
            pass

        def succeed(self) -> None:
            pass

        def fail(self, error: BaseException) -> None:
            pass

    with _patched(runner, "Workflow", Untraced):
        yield


@contextlib.contextmanager
def _no_usage_callback() -> Iterator[None]:
    """The run's `UsageCollector`: made for each run, offered to LangChain's configure hook
    (an `echo` run calls no model, so the hook meets only the graph's own manager, which the
    collector skips) and asked for the run's usage at its end. Off, the runner gets a stand-in
    that counts nothing (usage then reads zero) and sets a context variable no configure hook
    reads (nor `get_request`, which no benchmark graph calls)."""
    from contextvars import ContextVar

    from lgos.core.run_events import NO_USAGE, Usage
    from lgos.run import runner

    class Uncounted:
        def __init__(self, request: Any = None) -> None:
            self.request = request

        def usage(self, final: Any = None) -> Usage:
            return NO_USAGE

    unread: ContextVar[Any] = ContextVar("unread_usage", default=None)
    with _patched(runner, "collecting", unread), _patched(runner, "UsageCollector", Uncounted):
        yield


@dataclass(frozen=True)
class Feature:
    name: str
    switch_off: Callable[[], contextlib.AbstractContextManager[None]]
    apis: tuple[str, ...] = ("chat", "responses")
    # True: measured on the LGOS app built with `store` off by default instead of a patch.
    nostore_app: bool = False


FEATURES = (
    Feature("request record", _no_request_record),
    Feature("JSON limits", _no_json_limits),
    Feature("body limits", _no_body_timeout),
    Feature("workflow span", _no_workflow_span),
    Feature("usage callback", _no_usage_callback),
    Feature("stored Responses", contextlib.nullcontext, apis=("responses",), nostore_app=True),
)


# --- the apps ----------------------------------------------------------------------------


def _configure_logging(log_file: Any) -> None:
    """`lgos serve`'s logging configuration, writing to `log_file` instead of stdout."""
    from lgos.server.logging import logging_config

    config = logging_config(("benchmarks",), json_output=True)
    logging.config.dictConfig(config)
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler):
            handler.setStream(log_file)


def _lgos_app(store: bool) -> Any:
    from lgos.server.app import create_app
    from lgos.server.settings import ServerSettings

    settings = ServerSettings(
        REGISTRY=None, POSTGRES_URI=None, STORE_RESPONSES=store, ENABLE_LANGFUSE=False
    )
    return create_app(graphs.create_registry, settings=settings)


@contextlib.asynccontextmanager
async def started_apps(
    log_file: Any, warmup: int, concurrency: int
) -> AsyncIterator[dict[str, Any]]:
    """Bare, LGOS and LGOS without stored Responses, started, logging as `lgos serve` does
    (to `log_file`), warmed up, and their start-up objects frozen as `lgos serve` freezes them."""
    lgos = _lgos_app(store=True)
    nostore = _lgos_app(store=False)
    apps: dict[str, Any] = {"bare": bare.app, "lgos": lgos, "lgos-nostore": nostore}
    async with contextlib.AsyncExitStack() as stack:
        await stack.enter_async_context(lgos.router.lifespan_context(lgos))
        await stack.enter_async_context(nostore.router.lifespan_context(nostore))
        _configure_logging(log_file)  # after start-up, which logs through Uvicorn's setup
        for api in PATHS:  # warm-up: imports, caches, first-call paths
            for app in apps.values():
                await _batch(app, api, warmup, concurrency)
        gc.collect()
        gc.freeze()
        yield apps


def batches(
    api: str, apps: dict[str, Any], features: list[Feature]
) -> list[tuple[str, Any, Feature | None]]:
    """One pass's batches for `api`: bare, LGOS whole, then LGOS without each feature."""
    chosen: list[tuple[str, Any, Feature | None]] = [
        ("bare", apps["bare"], None),
        ("lgos", apps["lgos"], None),
    ]
    return chosen + [
        (f.name, apps["lgos-nostore" if f.nostore_app else "lgos"], f)
        for f in features
        if api in f.apis
    ]


async def _run(args: argparse.Namespace, log_file: Any) -> dict[str, dict[str, list[float]]]:
    features = [f for f in FEATURES if not args.only or f.name in args.only]
    # per API: label -> per-pass µs/request
    results: dict[str, dict[str, list[float]]] = {api: {} for api in PATHS}
    async with started_apps(log_file, args.warmup, args.concurrency) as apps:
        for number in range(1, args.passes + 1):
            for api in PATHS:
                row = results[api]
                for label, app, feature in batches(api, apps, features):
                    with feature.switch_off() if feature else contextlib.nullcontext():
                        cost = await _batch(
                            app, api, args.requests, args.concurrency, count_calls=args.calls
                        )
                    row.setdefault(label, []).append(cost if args.calls else cost * 1e6)
            print(f"pass {number}/{args.passes} done", file=sys.stderr, flush=True)
    return results


def _report(results: dict[str, dict[str, list[float]]], args: argparse.Namespace) -> str:
    unit = "function calls" if args.calls else "µs of process CPU"
    lines = [
        f"in-process, `echo`, concurrency {args.concurrency}, {args.passes} passes of "
        f"{args.requests} requests per batch; {unit} per request, medians over "
        "passes of the paired per-pass figures",
        "",
        f"| api | batch | {'calls' if args.calls else 'CPU'} / request | lgos − this batch "
        "| this ÷ bare |",
        "| --- | --- | ---: | ---: | ---: |",
    ]
    for api, row in results.items():
        lgos = row["lgos"]
        bare_cpu = row["bare"]
        for label, values in row.items():
            median = statistics.median(values)
            saved = statistics.median(w - v for w, v in zip(lgos, values, strict=True))
            ratio = statistics.median(v / b for v, b in zip(values, bare_cpu, strict=True))
            shown = "–" if label == "lgos" else f"{saved:+.0f}"
            lines.append(f"| {api} | {label} | {median:.0f} | {shown} | {ratio:.2f}× |")
    return "\n".join(lines)


async def _functions_called(app: Any, api: str, requests: int) -> set[Any]:
    """The code objects of every Python function `requests` requests to `app` call."""
    called: set[Any] = set()

    def record(frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            called.add(frame.f_code)

    path, body = PATHS[api], _body(api)
    sys.setprofile(record)
    try:
        for _ in range(requests):
            await _request(app, path, body)
    finally:
        sys.setprofile(None)
    return called


async def _check(args: argparse.Namespace, log_file: Any) -> list[str]:
    """The switches that take nothing away: with one on, LGOS still calls every function it
    calls whole. (Call counts cannot tell: the event loop's own calls vary by a few a request
    from batch to batch.) Such a switch patches a name the request path no longer uses, and
    the timing then reports noise as the feature's cost."""
    features = [f for f in FEATURES if not args.only or f.name in args.only]
    idle: list[str] = []
    async with started_apps(log_file, args.warmup, args.concurrency) as apps:
        for api in PATHS:
            whole = await _functions_called(apps["lgos"], api, 3)
            for label, app, feature in batches(api, apps, features)[2:]:
                assert feature is not None
                with feature.switch_off():
                    switched = await _functions_called(app, api, 3)
                if not whole - switched:
                    idle.append(f"{api}: {label}")
    return idle


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.foreground.features")
    parser.add_argument("--requests", type=int, default=1000, help="per batch")
    parser.add_argument("--passes", type=int, default=5)
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument(
        "--calls",
        action="store_true",
        help="count function calls per request instead of timing (the same on any machine's "
        "load: run it with --passes 1 and a few hundred requests)",
    )
    parser.add_argument(
        "--only",
        nargs="*",
        default=[],
        help=f"feature names to switch off (default: all of {[f.name for f in FEATURES]})",
    )
    parser.add_argument(
        "--check",
        action="store_true",
        help="measure nothing: check that each switch takes some function LGOS calls off "
        "the request's path (exit 1 naming those that do not)",
    )
    args = parser.parse_args(argv)
    with tempfile.TemporaryFile("w") as log_file:
        if args.check:
            idle = asyncio.run(_check(args, log_file))
            for row in idle:
                print(f"switches nothing off: {row}")
            return 1 if idle else 0
        results = asyncio.run(_run(args, log_file))
    print(_report(results, args))
    return 0


if __name__ == "__main__":
    sys.exit(main())
