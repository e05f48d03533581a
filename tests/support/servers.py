"""Real sockets for in-process apps. (`lgos serve` processes: tests/support/processes.py.)"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import uvicorn
from fastapi import FastAPI

from tests.support.processes import free_port


@asynccontextmanager
async def serve_in_process(app: FastAPI) -> AsyncIterator[str]:
    """Run `app` on a loopback port in this event loop; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_config=None, lifespan="off")
    )
    task = asyncio.create_task(server.serve())
    while not server.started:
        if task.done():
            task.result()
        await asyncio.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        await task
