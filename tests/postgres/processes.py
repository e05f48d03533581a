"""`lgos serve` as a real process on a loopback port, for the replica tests."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
from openai import AsyncOpenAI

REPO_ROOT = Path(__file__).resolve().parents[2]
START_SECONDS = 120.0  # imports alone take seconds on a busy CI machine


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


@dataclass
class LgosServer:
    process: subprocess.Popen[bytes]
    port: int
    log: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def client(self) -> AsyncOpenAI:
        return AsyncOpenAI(
            base_url=self.base_url,
            api_key="x",
            _strict_response_validation=True,
            max_retries=0,
            timeout=60,
        )

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def kill(self) -> None:
        """SIGKILL: no shutdown hooks, the database sessions just drop."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


def start_lgos(
    registry: str, database_uri: str, log_dir: Path, extra_env: dict[str, str] | None = None
) -> LgosServer:
    port = free_port()
    env = {key: value for key, value in os.environ.items() if not key.startswith("LGOS_")}
    env.update(
        LGOS_POSTGRES_URI=database_uri,
        LGOS_BACKGROUND="none",
        LGOS_INTERRUPT_SWEEP_INTERVAL_MINUTES="0",
    )
    env.update(extra_env or {})
    log = log_dir / f"lgos-{port}.log"
    lgos = Path(sys.executable).with_name("lgos")
    with log.open("wb") as sink:
        process = subprocess.Popen(
            [str(lgos), "serve", registry, "--host", "127.0.0.1", "--port", str(port)],
            cwd=REPO_ROOT,
            env=env,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    server = LgosServer(process, port, log)
    deadline = time.monotonic() + START_SECONDS
    while True:
        if process.poll() is not None:
            raise AssertionError(f"lgos serve exited with {process.returncode}:\n{server.output()}")
        try:
            if httpx.get(f"{server.base_url}/models", timeout=2).status_code == 200:
                return server
        except httpx.TransportError:
            pass
        if time.monotonic() > deadline:
            server.kill()
            raise AssertionError(f"lgos serve did not start:\n{server.output()}")
        time.sleep(0.1)
