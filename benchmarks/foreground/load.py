"""The load client: keep-alive connections, a fixed number of requests at a fixed concurrency."""

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp
from openai.types.responses import ResponseTextDeltaEvent

PROMPT = "Say hello to the benchmark."


@dataclass(frozen=True)
class Scenario:
    """One kind of request: which API, which graph, streamed or not, how many at once."""

    name: str
    api: str  # "chat" or "responses"
    model: str
    stream: bool
    concurrency: int

    def body(self) -> bytes:
        if self.api == "chat":
            messages = [{"role": "user", "content": PROMPT}]
            payload: dict[str, Any] = {"model": self.model, "messages": messages}
        else:
            payload = {"model": self.model, "input": PROMPT}
        payload["stream"] = self.stream
        return json.dumps(payload).encode()

    @property
    def path(self) -> str:
        return "/v1/chat/completions" if self.api == "chat" else "/v1/responses"


@dataclass
class Batch:
    """What one batch of requests measured on the client side."""

    requests: int = 0
    wall: float = 0.0
    latencies: list[float] = field(default_factory=list)
    # Streams only: seconds to the first text delta, deltas, body bytes, seconds per stream.
    first_delta: list[float] = field(default_factory=list)
    deltas: list[int] = field(default_factory=list)
    body_bytes: list[int] = field(default_factory=list)
    durations: list[float] = field(default_factory=list)
    sample_delta: dict[str, Any] | None = None

    def extend(self, other: "Batch") -> None:
        """Add another batch's figures to this one's (the parts of one interleaved batch)."""
        self.requests += other.requests
        self.wall += other.wall
        self.latencies += other.latencies
        self.first_delta += other.first_delta
        self.deltas += other.deltas
        self.body_bytes += other.body_bytes
        self.durations += other.durations
        if self.sample_delta is None:
            self.sample_delta = other.sample_delta


def _text_delta(api: str, event: dict[str, Any]) -> bool:
    if api == "chat":
        choices = event.get("choices") or [{}]
        return bool(choices[0].get("delta", {}).get("content"))
    return event.get("type") == "response.output_text.delta"


async def _read_stream(
    api: str, response: aiohttp.ClientResponse, start: float, batch: Batch
) -> None:
    first = None
    deltas = 0
    size = 0
    async for line in response.content:
        size += len(line)
        if not line.startswith(b"data: ") or line.startswith(b"data: [DONE]"):
            continue
        event = json.loads(line[6:])
        if _text_delta(api, event):
            deltas += 1
            if first is None:
                first = time.perf_counter() - start
                if api == "responses" and batch.sample_delta is None:
                    batch.sample_delta = event
    end = time.perf_counter() - start
    if first is None:
        raise RuntimeError("the stream carried no text delta")
    batch.first_delta.append(first)
    batch.deltas.append(deltas)
    batch.body_bytes.append(size)
    batch.durations.append(end)


async def run_batch(
    session: aiohttp.ClientSession, base_url: str, scenario: Scenario, requests: int
) -> Batch:
    """Send `requests` requests with `scenario.concurrency` in flight; check every answer."""
    url = base_url + scenario.path
    body = scenario.body()
    headers = {"content-type": "application/json"}
    batch = Batch(requests=requests)
    remaining = requests

    async def worker() -> None:
        nonlocal remaining
        while remaining > 0:
            remaining -= 1
            start = time.perf_counter()
            async with session.post(url, data=body, headers=headers) as response:
                if response.status != 200:
                    text = await response.text()
                    raise RuntimeError(f"{url} answered {response.status}: {text[:300]}")
                if scenario.stream:
                    await _read_stream(scenario.api, response, start, batch)
                elif scenario.model == "echo" and PROMPT.encode() not in await response.read():
                    raise RuntimeError(f"{url} did not echo the prompt")
                else:
                    await response.read()
            batch.latencies.append(time.perf_counter() - start)

    start = time.perf_counter()
    workers = min(scenario.concurrency, requests)
    await asyncio.gather(*(worker() for _ in range(workers)))
    batch.wall = time.perf_counter() - start
    return batch


def responses_delta_fields_ok(event: dict[str, Any] | None) -> bool:
    """Whether a Responses text delta carries every field the OpenAI SDK's type requires."""
    if event is None:
        return False
    try:
        ResponseTextDeltaEvent.model_validate(event, strict=False)
    except ValueError:
        return False
    return True


def session(limit: int) -> aiohttp.ClientSession:
    connector = aiohttp.TCPConnector(limit=limit, keepalive_timeout=600)
    timeout = aiohttp.ClientTimeout(total=300)
    return aiohttp.ClientSession(connector=connector, timeout=timeout)
