"""An SSE response that pings while idle and cancels the run when the client leaves.

The frames are sent from the request's own task (no hand-off per chunk). One watcher task per
stream waits for the client's disconnect and sends keep-alive comments when nothing was sent
for `ping_interval` seconds.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

from starlette.types import Message, Receive, Scope, Send

from lgos.wire.sse import PING

HEADERS = [
    (b"content-type", b"text/event-stream; charset=utf-8"),
    (b"cache-control", b"no-cache"),
    (b"x-accel-buffering", b"no"),
]


class EventStreamResponse:
    def __init__(
        self,
        frames: AsyncIterator[bytes],
        *,
        ping_interval: float = 15.0,
        headers: list[tuple[bytes, bytes]] | None = None,
    ) -> None:
        self.frames = frames
        self.ping_interval = ping_interval
        self.headers = HEADERS + (headers or [])
        self.background = None

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

        await send({"type": "http.response.start", "status": 200, "headers": self.headers})
        watcher = asyncio.create_task(watch())
        try:
            async for frame in self.frames:
                async with lock:
                    await send({"type": "http.response.body", "body": frame, "more_body": True})
                last_sent = time.monotonic()
            finished = True
            async with lock:
                await send({"type": "http.response.body", "body": b"", "more_body": False})
        except asyncio.CancelledError:
            if not client_left:
                raise
            # The client left: the run was cancelled through the frame iterator; finish quietly.
            streamer.uncancel()
        finally:
            finished = True
            watcher.cancel()
            await self.frames.aclose()  # type: ignore[attr-defined]
