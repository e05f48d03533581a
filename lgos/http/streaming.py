"""An SSE response that pings while idle and cancels the run when the client leaves.

The services yield events (the wire's dicts); this response frames each one as it sends it
(`lgos.http.sse`), so no module below HTTP produces SSE bytes. The frames are sent from the
request's own task (no hand-off per chunk). One watcher task per stream waits for the
client's disconnect and sends keep-alive comments when nothing was sent for `ping_interval`
seconds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncGenerator, Callable
from typing import Generic, TypeVar

from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from lgos.http.sse import PING

Event = TypeVar("Event")

HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


class EventStreamResponse(Response, Generic[Event]):
    """A Starlette `Response` (headers, middleware and handlers treat it as one) whose body is
    `events`, each sent as `frame(event)`, then `last` (Chat Completions' `[DONE]`). Not
    Starlette's `StreamingResponse`: that one sends each chunk through a memory stream to a
    second task and has no keep-alive."""

    def __init__(
        self,
        events: AsyncGenerator[Event],
        frame: Callable[[Event], bytes],
        *,
        last: bytes | None = None,
        ping_interval: float = 15.0,
    ) -> None:
        self.events = events
        self.frame = frame
        self.last = last
        self.ping_interval = ping_interval
        self.status_code = 200
        self.background = None
        self.raw_headers = list(HEADERS)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        streamer = asyncio.current_task()
        assert streamer is not None
        lock = asyncio.Lock()
        last_sent = time.monotonic()
        client_left = False
        finished = False

        async def watch() -> None:
            nonlocal client_left
            while True:
                try:
                    message: Message = await asyncio.wait_for(receive(), self.ping_interval)
                except TimeoutError:
                    if time.monotonic() - last_sent >= self.ping_interval:
                        async with lock:
                            await send(
                                {"type": "http.response.body", "body": PING, "more_body": True}
                            )
                    continue
                if message["type"] == "http.disconnect":
                    if not finished:
                        client_left = True
                        streamer.cancel()
                    return

        await send(
            {"type": "http.response.start", "status": self.status_code, "headers": self.raw_headers}
        )
        watcher = asyncio.create_task(watch())
        try:
            frame = self.frame
            async for event in self.events:
                body = frame(event)
                async with lock:
                    await send({"type": "http.response.body", "body": body, "more_body": True})
                last_sent = time.monotonic()
            finished = True
            async with lock:
                await send(
                    {"type": "http.response.body", "body": self.last or b"", "more_body": False}
                )
        except asyncio.CancelledError:
            if not client_left:
                raise
            # The client left: the run was cancelled through the frame iterator; finish quietly.
            streamer.uncancel()
        finally:
            finished = True
            watcher.cancel()
            await self.events.aclose()
