"""Real sockets: an in-process Uvicorn server, and `lgos serve` as a child process."""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import AsyncIterator, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from pathlib import Path

import httpx
import uvicorn
from fastapi import FastAPI

REPO = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


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


def wait_until_healthy(url: str, process: subprocess.Popen[bytes], timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}")
        try:
            if httpx.get(f"{url}/v1/health", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise TimeoutError(f"{url} did not become healthy in {timeout}s")


@contextmanager
def lgos_serve(
    registry: str = "demo.registry:create_registry",
    env: Mapping[str, str] | None = None,
    args: tuple[str, ...] = (),
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """`lgos serve` as a real process on a free port; yields (base URL, process)."""
    port = free_port()
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith(("LGOS_", "UVICORN_"))},
        "LGOS_INTERRUPT_SWEEP_INTERVAL_MINUTES": "0",
        **(env or {}),
    }
    process = subprocess.Popen(
        [sys.executable, "-m", "lgos.cli", "serve", registry, "--port", str(port), *args],
        cwd=REPO,
        env=environment,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until_healthy(url, process)
        yield url, process
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
