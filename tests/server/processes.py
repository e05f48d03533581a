"""Real `lgos serve` processes for the tests: start, read their stdout, stop."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

SAMPLE_DIR = Path(__file__).parent  # the working directory: `sample_app` is a local package
SAMPLE_REGISTRY = "sample_app.registry:create_registry"
LGOS = str(Path(sys.executable).parent / "lgos")
START_TIMEOUT = 90.0
_RUNNING = re.compile(r"Uvicorn running on http://([\d.]+):(\d+)")
# `lgos worker` on Hatchet: the SDK spawns a listener process that logs in its own format.
_HATCHET_SUBPROCESS_LINE = re.compile(r"^\[(DEBUG|INFO|WARNING|ERROR|CRITICAL)\]\t\U0001fa93 -- ")
# Variables a developer's shell may hold that would change what the process does.
_OWNED_PREFIXES = ("LGOS_", "UVICORN_", "LANGFUSE_", "OTEL_")
_OWNED_NAMES = ("WEB_CONCURRENCY", "FORWARDED_ALLOW_IPS")


def clean_environment(**overrides: str) -> dict[str, str]:
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(_OWNED_PREFIXES) and key not in _OWNED_NAMES
    }
    env.update(overrides)
    return env


class ServerProcess:
    """Collects the process's stdout and stderr lines as they arrive."""

    def __init__(self, process: subprocess.Popen[str]) -> None:
        self.process = process
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self._changed = threading.Condition()
        self._readers = [
            threading.Thread(target=self._read, args=(process.stdout, self.stdout), daemon=True),
            threading.Thread(target=self._read, args=(process.stderr, self.stderr), daemon=True),
        ]
        for reader in self._readers:
            reader.start()
        self.base_url = ""

    def _read(self, stream: Any, lines: list[str]) -> None:
        for line in stream:
            with self._changed:
                lines.append(line.rstrip("\n"))
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, condition: Callable[[], Any], timeout: float, what: str) -> Any:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                result = condition()
                if result:
                    return result
                if self.process.poll() is not None and not any(
                    reader.is_alive() for reader in self._readers
                ):
                    result = condition()
                    if result:
                        return result
                    raise AssertionError(f"process exited before {what}:\n{self.output()}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"timed out waiting for {what}:\n{self.output()}")
                self._changed.wait(min(remaining, 1.0))

    def output(self) -> str:
        return "\n".join(["--- stdout", *self.stdout[-60:], "--- stderr", *self.stderr[-60:]])

    def records(self) -> list[dict[str, Any]]:
        """Every stdout line, parsed: each one must be a JSON object (besides the lines of the
        Hatchet SDK's action-listener subprocess, which LGOS does not configure)."""
        parsed = []
        for line in list(self.stdout):
            if _HATCHET_SUBPROCESS_LINE.match(line):
                continue
            record = json.loads(line)
            assert isinstance(record, dict), line
            parsed.append(record)
        return parsed

    def wait_for_record(
        self, match: Callable[[dict[str, Any]], bool], timeout: float = 30.0, count: int = 1
    ) -> list[dict[str, Any]]:
        def found() -> list[dict[str, Any]] | None:
            hits = [record for record in self.records() if match(record)]
            return hits if len(hits) >= count else None

        return self.wait_for(found, timeout, "a matching log record")  # type: ignore[no-any-return]

    def wait_until_serving(self) -> str:
        def running() -> str | None:
            for line in self.stdout:
                found = _RUNNING.search(line)
                if found:
                    return f"http://{found.group(1)}:{found.group(2)}"
            return None

        self.base_url = self.wait_for(running, START_TIMEOUT, "'Uvicorn running on'")
        return self.base_url

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        for reader in self._readers:
            reader.join(timeout=10)
        return self.process.returncode


def start(args: list[str], env: dict[str, str], cwd: Path = SAMPLE_DIR) -> ServerProcess:
    process = subprocess.Popen(
        [LGOS, "serve", *args],
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    return ServerProcess(process)


@contextmanager
def serving(
    args: list[str], env: dict[str, str], cwd: Path = SAMPLE_DIR
) -> Iterator[ServerProcess]:
    server = start(args, env, cwd)
    try:
        server.wait_until_serving()
        yield server
    finally:
        server.stop()


def run_to_exit(args: list[str], env: dict[str, str], cwd: Path = SAMPLE_DIR) -> ServerProcess:
    """For start-ups that must fail: wait for the exit (killing it if it serves instead)."""
    server = start(args, env, cwd)
    try:
        server.process.wait(timeout=START_TIMEOUT)
    except subprocess.TimeoutExpired:
        server.stop()
        raise AssertionError(f"the process did not exit:\n{server.output()}") from None
    server.stop()
    return server
