"""A bounded soak: 200 concurrent streams and 200 non-streaming clients for 60 s against one
`lgos serve` process on loopback, reporting errors, latency percentiles and server memory.

    uv run --with-requirements benchmarks/requirements.txt python -m benchmarks.foreground.soak
    ... python -m benchmarks.foreground.soak --seconds 10 --streams 20 --clients 20   # a quick look

Every client loops until the deadline, then stops: the run is bounded in time and in
concurrency. The server runs with LGOS's defaults (`lgos serve`'s protocol and limits, the
in-memory engine), so the figures include the hostile-input guards.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp

from benchmarks.common.machine import REPO
from benchmarks.common.processes import free_port

STREAM_BODY = {
    "model": "streaming-long-mock",
    "input": "soak",
    "stream": True,
    "metadata": {"lgos_settings": json.dumps({"words": 40, "delay_ms": 25})},
}
PLAIN_BODY = {"model": "simple-graph", "input": "soak"}


@dataclass
class Tally:
    latencies: list[float] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)

    def error(self, kind: str) -> None:
        self.errors[kind] = self.errors.get(kind, 0) + 1


def rss_mb(pid: int, key: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(key + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


async def stream_client(
    session: aiohttp.ClientSession, url: str, until: float, tally: Tally
) -> None:
    while time.monotonic() < until:
        started = time.monotonic()
        try:
            async with session.post(url, json=STREAM_BODY) as response:
                if response.status != 200:
                    tally.error(f"http {response.status}")
                    continue
                completed = False
                async for line in response.content:
                    if line.startswith(b"event: response.completed"):
                        completed = True
                if not completed:
                    tally.error("stream without response.completed")
                    continue
        except (aiohttp.ClientError, TimeoutError) as error:
            tally.error(type(error).__name__)
            continue
        tally.latencies.append(time.monotonic() - started)


async def plain_client(
    session: aiohttp.ClientSession, url: str, until: float, tally: Tally
) -> None:
    while time.monotonic() < until:
        started = time.monotonic()
        try:
            async with session.post(url, json=PLAIN_BODY) as response:
                body = await response.json()
                if response.status != 200 or body.get("status") != "completed":
                    tally.error(f"http {response.status}")
                    continue
        except (aiohttp.ClientError, TimeoutError) as error:
            tally.error(type(error).__name__)
            continue
        tally.latencies.append(time.monotonic() - started)


def percentiles(values: list[float]) -> dict[str, float]:
    if len(values) < 2:
        return {}
    cuts = statistics.quantiles(values, n=100)
    return {f"p{p}": round(cuts[p - 1] * 1000, 1) for p in (50, 90, 99)} | {
        "max": round(max(values) * 1000, 1)
    }


async def soak(
    base: str, pid: int, seconds: float, streams: int, clients: int
) -> dict[str, object]:
    url = f"{base}/v1/responses"
    connector = aiohttp.TCPConnector(limit=streams + clients + 10)
    timeout = aiohttp.ClientTimeout(total=120)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        # One warm-up round, so "before" is the server's steady size, not its cold start.
        await plain_client(session, url, time.monotonic() + 1, Tally())
        before = rss_mb(pid)
        until = time.monotonic() + seconds
        streamed, plain = Tally(), Tally()
        await asyncio.gather(
            *(stream_client(session, url, until, streamed) for _ in range(streams)),
            *(plain_client(session, url, until, plain) for _ in range(clients)),
        )
    return {
        "seconds": seconds,
        "streams": {
            "clients": streams,
            "completed": len(streamed.latencies),
            "errors": streamed.errors,
            "latency_ms": percentiles(streamed.latencies),
        },
        "non_streaming": {
            "clients": clients,
            "completed": len(plain.latencies),
            "errors": plain.errors,
            "latency_ms": percentiles(plain.latencies),
        },
        "server_rss_mb": {
            "before": round(before, 1),
            "after": round(rss_mb(pid), 1),
            "peak": round(rss_mb(pid, "VmHWM"), 1),
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m benchmarks.foreground.soak", description=__doc__
    )
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--streams", type=int, default=200)
    parser.add_argument("--clients", type=int, default=200)
    args = parser.parse_args(argv)
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("LGOS_")}
    lgos = str(Path(sys.executable).with_name("lgos"))
    server = subprocess.Popen(
        [
            lgos,
            "serve",
            "demo.registry:create_registry",
            "--host",
            "127.0.0.1",
            "--port",
            str(port),
            "--log-level",
            "warning",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
    )
    try:
        base = f"http://127.0.0.1:{port}"
        deadline = time.monotonic() + 120
        while True:
            try:
                urllib.request.urlopen(f"{base}/v1/models", timeout=2)
                break
            except OSError:
                if time.monotonic() > deadline or server.poll() is not None:
                    raise SystemExit("lgos serve did not start") from None
                time.sleep(0.2)
        result = asyncio.run(soak(base, server.pid, args.seconds, args.streams, args.clients))
    finally:
        server.terminate()
        server.wait(timeout=30)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
