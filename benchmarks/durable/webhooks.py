"""API CPU per background run: a client that waits by webhook against one that polls (a
measurement, not a test).

    uv run --with-requirements benchmarks/requirements.txt \\
        python -m benchmarks.durable.webhooks [--runs 40] [--engines dbos,hatchet]

`just bench-durable` runs it after its own suite (its "webhook or poll" table). For each engine
it starts one `lgos serve` and two `lgos worker` (`deployments.lgos_deployment`) with
`LGOS_WEBHOOKS` pointing at a receiver in this process (a loopback HTTP server that verifies
each event's signature with the official SDK), then, alternating, creates `--runs` background
runs of `background-mock` (`delay_seconds: 2`: a short job, so a poller polls a few times, as
the demo clients do for real jobs) at once and waits for them:

- polled: each run is polled every 250 ms (the demo clients' rate) until it completed;
- webhook: each run waits for its `response.completed` event, then is fetched once.

The API process's CPU (user + system) over each batch, divided by the runs, is the figure; the
workers deliver the webhooks, so their CPU is not the API's.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import json
import statistics
import sys
from collections.abc import Awaitable, Callable
from contextlib import ExitStack
from typing import Any

from openai import AsyncOpenAI, OpenAI

from benchmarks.durable.deployments import (
    Deployment,
    cpu_seconds,
    engine_settings,
    lgos_deployment,
    stop_children_on_sigterm,
)

SECRET = "whsec_" + base64.b64encode(b"lgos-benchmark-webhook-secret-32").decode()
SHORT_JOB = {"lgos_settings": '{"delay_seconds": 2}'}
POLL_SECONDS = 0.25
PASSES = 3
# Runs per batch in `just bench-durable`, by its size.
WEBHOOK_RUNS = {"full": 40, "quick": 20, "smoke": 4}


class Receiver:
    """A loopback HTTP server that verifies each webhook and wakes the run waiting for it."""

    def __init__(self) -> None:
        self._waiting: dict[str, asyncio.Future[None]] = {}
        self._early: set[str] = set()
        self._verifier = OpenAI(api_key="unused").webhooks
        self.server: asyncio.Server | None = None
        self.port = 0

    async def start(self) -> None:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", self.port)
        self.port = self.server.sockets[0].getsockname()[1]

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode().split("\r\n")
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, value = line.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                self._verifier.verify_signature(body, headers, secret=SECRET)
                self._arrived(str(json.loads(body)["data"]["id"]))
                writer.write(b"HTTP/1.1 204 No Content\r\ncontent-length: 0\r\n\r\n")
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()

    def _arrived(self, response_id: str) -> None:
        waiter = self._waiting.pop(response_id, None)
        if waiter is None:
            self._early.add(response_id)
        elif not waiter.done():
            waiter.set_result(None)

    async def wait(self, response_id: str) -> None:
        if response_id in self._early:
            self._early.discard(response_id)
            return
        waiter = self._waiting.setdefault(response_id, asyncio.get_running_loop().create_future())
        await asyncio.wait_for(waiter, 300)


async def _polled(client: AsyncOpenAI, response_id: str) -> None:
    while True:
        response = await client.responses.retrieve(response_id)
        if response.status not in ("queued", "in_progress"):
            return
        await asyncio.sleep(POLL_SECONDS)


async def _batch(client: AsyncOpenAI, runs: int, wait: Callable[[str], Awaitable[None]]) -> None:
    async def one(index: int) -> None:
        accepted = await client.responses.create(
            model="background-mock", input=f"job {index}", background=True, metadata=SHORT_JOB
        )
        await wait(accepted.id)
        done = await client.responses.retrieve(accepted.id)
        if done.status != "completed":
            raise RuntimeError(f"{accepted.id} ended {done.status}")

    await asyncio.gather(*(one(index) for index in range(runs)))


async def measure(
    deployment: Deployment, receiver: Receiver, runs: int, passes: int = PASSES
) -> dict[str, list[float]]:
    """API CPU ms per run, per pass, for each way of waiting."""
    api = deployment.processes[:1]
    figures: dict[str, list[float]] = {"polled": [], "webhook": []}

    async def by_webhook(response_id: str) -> None:
        await receiver.wait(response_id)

    async with AsyncOpenAI(
        base_url=f"{deployment.base_url}/v1", api_key="bench", max_retries=3
    ) as client:
        ways: dict[str, Callable[[str], Awaitable[None]]] = {
            "polled": lambda response_id: _polled(client, response_id),
            "webhook": by_webhook,
        }
        await _batch(client, 2, by_webhook)  # warm-up: imports, pools, first deliveries
        for _ in range(passes):
            for name, wait in ways.items():
                before = cpu_seconds(api)
                await _batch(client, runs, wait)
                figures[name].append((cpu_seconds(api) - before) * 1000 / runs)
    return figures


def webhook_environment(receiver: Receiver) -> dict[str, str]:
    endpoint = {"url": f"http://127.0.0.1:{receiver.port}/hooks", "secret": SECRET}
    return {"LGOS_WEBHOOKS": json.dumps([endpoint])}


def run(engines: list[str], runs: int, passes: int = PASSES) -> dict[str, dict[str, Any]]:
    """Each engine's figures: per pass, and their medians."""
    results: dict[str, dict[str, Any]] = {}

    async def one(engine: str) -> dict[str, list[float]]:
        receiver = Receiver()
        await receiver.start()
        try:
            with ExitStack() as stack:
                settings = stack.enter_context(engine_settings(engine))
                deployment = stack.enter_context(
                    lgos_deployment(engine, stack, {**settings, **webhook_environment(receiver)})
                )
                return await measure(deployment, receiver, runs, passes)
        finally:
            assert receiver.server is not None
            receiver.server.close()

    for engine in engines:
        figures = asyncio.run(one(engine))
        results[engine] = {
            "passes": figures,
            "api_cpu_ms_per_run": {name: statistics.median(v) for name, v in figures.items()},
        }
        print(engine, json.dumps(results[engine]["api_cpu_ms_per_run"]), flush=True)
    return results


def markdown(results: dict[str, dict[str, Any]], runs: int) -> str:
    lines = [
        "",
        f"### Webhook or poll: API CPU per background run ({runs} runs at once, 2 s jobs)",
        "",
        "| Engine | Polled every 250 ms | Waits by webhook | Ratio |",
        "| --- | --- | --- | --- |",
    ]
    for engine, result in results.items():
        polled = result["api_cpu_ms_per_run"]["polled"]
        webhook = result["api_cpu_ms_per_run"]["webhook"]
        ratio = f"{webhook / polled:.2f}" if polled else "-"
        lines.append(f"| {engine} | {polled:.1f} ms | {webhook:.1f} ms | {ratio} |")
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--passes", type=int, default=PASSES)
    parser.add_argument("--engines", default="dbos,hatchet")
    args = parser.parse_args()
    stop_children_on_sigterm()
    engines = [name.strip() for name in args.engines.split(",") if name.strip()]
    results = run(engines, args.runs, args.passes)
    print(markdown(results, args.runs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
