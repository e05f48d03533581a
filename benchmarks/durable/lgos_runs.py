"""LGOS's side of each measurement, through the official SDK against a running deployment."""

from __future__ import annotations

import asyncio
import json
import random
import time
from typing import Any

import aiohttp
import httpx
from openai import AsyncOpenAI

from benchmarks.durable.timing import (
    BURST_POLL_SECONDS,
    IN_FLIGHT,
    POLL_SECONDS,
    burst_rate,
    median_ms,
)

NO_DELAY = {"lgos_settings": '{"delay_seconds": 0}'}
# The tailed run sleeps this long (the graph's maximum) while ticks are appended to its log.
TAIL_RUN_DELAY = {"lgos_settings": '{"delay_seconds": 300}'}
# A measurement's name for LGOS followed by stream to the run's end (push), not polled.
STREAMED = ", streamed"
TICK_BASE = 10_000  # sequence numbers of the appended ticks: above anything the worker writes


async def until_completed(
    client: AsyncOpenAI, response_id: str, poll: float = POLL_SECONDS
) -> None:
    while True:
        response = await client.responses.retrieve(response_id)
        if response.status == "completed":
            return
        if response.status not in ("queued", "in_progress"):
            raise RuntimeError(f"{response_id} ended {response.status}")
        await asyncio.sleep(poll)


async def create(client: AsyncOpenAI, text: str) -> str:
    accepted = await client.responses.create(
        model="background-mock", input=text, background=True, metadata=NO_DELAY
    )
    return accepted.id


async def latencies(client: AsyncOpenAI, runs: int) -> list[float]:
    """Seconds from create to completed, one background run at a time."""
    seconds = []
    for index in range(runs):
        started = time.perf_counter()
        await until_completed(client, await create(client, f"latency {index}"))
        seconds.append(time.perf_counter() - started)
    return seconds


async def lgos_latency(client: AsyncOpenAI, runs: int) -> float:
    return median_ms(await latencies(client, runs))


def _create_body(text: str, *, stream: bool = False) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "background-mock",
        "input": text,
        "background": True,
        "metadata": NO_DELAY,
    }
    if stream:
        body["stream"] = True
    return body


async def create_light(http: aiohttp.ClientSession, responses: str, text: str) -> str:
    """`create` for a burst, with plain HTTP and JSON: the same body the SDK sends; the answer
    must be a queued (or already started) background Response."""
    async with http.post(responses, json=_create_body(text)) as reply:
        reply.raise_for_status()
        accepted = json.loads(await reply.read())
    if accepted.get("object") != "response" or accepted.get("status") not in (
        "queued",
        "in_progress",
        "completed",
    ):
        raise RuntimeError(f"create answered {accepted!r}")
    return str(accepted["id"])


async def until_completed_light(http: aiohttp.ClientSession, url: str) -> None:
    """`until_completed` for a burst, read with plain HTTP and JSON (aiohttp, as the
    foreground suite's load client): the benchmark's clients share this machine's two cores
    with what they measure, and the official SDK's requests (httpx and a validated Response
    model per request) cost the client about 1 ms of CPU each, 15 to 20 ms per run of a burst,
    against about 4 ms per run for the floor's triggers and result subscription. A load
    generator should weigh as little as it can, so a burst's creates and polls both go through
    aiohttp. The one-at-a-time latency keeps the SDK: a client's CPU there is not on the
    critical path of anything but its own run, and the SDK is what a user would run."""
    while True:
        async with http.get(url) as reply:
            reply.raise_for_status()
            status = json.loads(await reply.read())["status"]
        if status == "completed":
            return
        if status not in ("queued", "in_progress"):
            raise RuntimeError(f"{url} ended {status}")
        await asyncio.sleep(BURST_POLL_SECONDS)


async def lgos_burst(client: AsyncOpenAI, burst: int) -> float:
    in_flight = asyncio.Semaphore(IN_FLIGHT)
    headers = {"Authorization": f"Bearer {client.api_key}"}
    responses = str(client.base_url).rstrip("/") + "/responses/"
    async with aiohttp.ClientSession(headers=headers) as http:

        async def one(index: int) -> None:
            async with in_flight:
                response_id = await create_light(http, responses.rstrip("/"), f"burst {index}")
            await until_completed_light(http, responses + response_id)

        return await burst_rate(burst, one)


async def _first_event(lines: Any) -> dict[str, Any]:
    async for line in lines:
        if line.startswith(b"data: "):
            event: dict[str, Any] = json.loads(line[6:])
            return event
    raise RuntimeError("the stream ended before its first event")


async def _until_ended(lines: Any) -> None:
    """Read a background Response's stream to its end; it must end completed."""
    async for line in lines:
        if not line.startswith(b"data: "):
            continue
        event = json.loads(line[6:])
        kind = event["type"]
        if kind == "response.completed":
            if event["response"]["status"] != "completed":
                raise RuntimeError(f"stream completed with {event['response']['status']}")
            return
        if kind in ("response.failed", "response.cancelled", "response.incomplete", "error"):
            raise RuntimeError(f"stream ended with {kind}")
    raise RuntimeError("the stream closed before the run ended")


async def streamed_run(
    http: aiohttp.ClientSession, responses: str, text: str, in_flight: asyncio.Semaphore | None
) -> None:
    """Create a background run with `stream` and follow it to `response.completed`: the
    client learns of the end by push (the API tails the run's event log, woken by
    PostgreSQL's LISTEN/NOTIFY), as the floor learns of its run's end by the engine's
    subscription. `in_flight` (a burst's) is held until the stream's first event, the
    create's answer, as the floor's is held around its trigger alone."""
    held = in_flight
    if held is not None:
        await held.acquire()
    try:
        async with http.post(responses, json=_create_body(text, stream=True)) as reply:
            reply.raise_for_status()
            first = await _first_event(reply.content)
            if first["type"] != "response.created":
                raise RuntimeError(f"the stream began with {first['type']}")
            if held is not None:
                held.release()
                held = None
            await _until_ended(reply.content)
    finally:
        if held is not None:
            held.release()


def _light_session(client: AsyncOpenAI) -> tuple[aiohttp.ClientSession, str]:
    headers = {"Authorization": f"Bearer {client.api_key}"}
    session = aiohttp.ClientSession(
        headers=headers, timeout=aiohttp.ClientTimeout(total=None, sock_read=120)
    )
    return session, str(client.base_url).rstrip("/") + "/responses"


async def lgos_latency_streamed(client: AsyncOpenAI, runs: int) -> float:
    """Create → `response.completed` read from the stream, one background run at a time."""
    http, responses = _light_session(client)
    async with http:
        seconds = []
        for index in range(runs):
            started = time.perf_counter()
            await streamed_run(http, responses, f"latency {index}", None)
            seconds.append(time.perf_counter() - started)
    return median_ms(seconds)


async def lgos_burst_streamed(client: AsyncOpenAI, burst: int) -> float:
    in_flight = asyncio.Semaphore(IN_FLIGHT)
    http, responses = _light_session(client)
    async with http:
        return await burst_rate(
            burst, lambda index: streamed_run(http, responses, f"burst {index}", in_flight)
        )


async def _answered(client: AsyncOpenAI, response: Any, background: bool) -> Any:
    if background:
        await until_completed(client, response.id)
        response = await client.responses.retrieve(response.id)
    return response


async def lgos_review(
    client: AsyncOpenAI, runs: int, *, background: bool, store: bool = True
) -> float:
    seconds = []
    for index in range(runs):
        started = time.perf_counter()
        paused = await _answered(
            client,
            await client.responses.create(
                model="background-interrupt",
                input=f"review {index}",
                metadata=NO_DELAY,
                background=background,
                store=store,
            ),
            background,
        )
        calls = [item for item in paused.output if item.type == "function_call"]
        assert calls, "the review graph did not pause"
        assert calls[0].name == "lgos_interrupt"
        final = await _answered(
            client,
            await client.responses.create(
                model="background-interrupt",
                previous_response_id=paused.id,
                input=[
                    {
                        "type": "function_call_output",
                        "call_id": calls[0].call_id,
                        "output": "approve",
                    }
                ],
                metadata=NO_DELAY,
                background=background,
                store=store,
            ),
            background,
        )
        assert final.status == "completed", final.status
        assert final.output_text, "no final answer"
        seconds.append(time.perf_counter() - started)
    return median_ms(seconds)


async def stream_tail(base_url: str, events: Any, ticks: int) -> list[float]:
    """Tail a streamed background run; append `ticks` events to its log one at a time (as its
    worker would) and time each from the append call to the client reading it."""
    from lgos.wire import ids

    received: dict[int, float] = {}
    arrived = asyncio.Condition()
    idle = asyncio.Event()  # the worker wrote its events before its long sleep
    response_id: list[str] = []

    async def read(http: httpx.AsyncClient) -> None:
        body = {
            "model": "background-mock",
            "input": "tail",
            "background": True,
            "stream": True,
            "metadata": TAIL_RUN_DELAY,
        }
        async with http.stream("POST", f"{base_url}/v1/responses", json=body) as stream:
            async for line in stream.aiter_lines():
                if not line.startswith("data: "):
                    continue
                event = json.loads(line[6:])
                now = time.perf_counter()
                if event["type"] == "response.created":
                    response_id.append(event["response"]["id"])
                if event["type"] == "response.output_item.done":
                    idle.set()  # the commentary ("Preparing the report") is all written
                async with arrived:
                    received[int(event["sequence_number"])] = now
                    arrived.notify_all()

    samples = []
    async with httpx.AsyncClient(timeout=httpx.Timeout(30, read=600)) as http:
        reader = asyncio.create_task(read(http))
        try:
            await asyncio.wait_for(idle.wait(), 120)
            parsed = ids.parse_run_response_id(response_id[0])
            assert parsed is not None
            for tick in range(ticks):
                number = TICK_BASE + tick
                # Idle between ticks, so the tail is waiting when each event lands.
                await asyncio.sleep(random.uniform(0.03, 0.06))
                started = time.perf_counter()
                await events.append(
                    parsed.nonce, [{"type": "lgos_bench.tick", "sequence_number": number}]
                )
                async with arrived:
                    await asyncio.wait_for(arrived.wait_for(lambda n=number: n in received), 10)
                samples.append((received[number] - started) * 1000)
            await http.post(f"{base_url}/v1/responses/{response_id[0]}/cancel")
            await asyncio.wait_for(reader, 60)
        finally:
            reader.cancel()
    return samples
