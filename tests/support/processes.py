"""The one launcher for real processes in the tests and the demo tests: `lgos serve`, `lgos
worker`, gateways and chat UIs. A `Process` keeps every line its stdout and stderr print (and
writes them to a log file when given one), waits for a condition with a deadline, and stops
what it started, its process group included when it leads one.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import IO, Any

import httpx2

REPO = Path(__file__).resolve().parents[2]
LGOS = str(Path(sys.executable).with_name("lgos"))
# Imports alone take tens of seconds on a busy 2-core machine: a start may take this long.
# Generous: on a busy 2-core machine several processes importing at once take minutes.
START_TIMEOUT = float(os.environ.get("LGOS_TEST_START_TIMEOUT") or "240")
_RUNNING = re.compile(r"Uvicorn running on http://([\d.]+):(\d+)")
# `lgos worker` on Hatchet: the SDK spawns a listener process that logs in its own format.
_HATCHET_SUBPROCESS_LINE = re.compile(r"^\[(DEBUG|INFO|WARNING|ERROR|CRITICAL)\]\t\U0001fa93 -- ")
# Variables a developer's shell may hold that would change what an `lgos` process does.
_OWNED_PREFIXES = ("LGOS_", "UVICORN_", "LANGFUSE_", "OTEL_")
_OWNED_NAMES = ("WEB_CONCURRENCY", "FORWARDED_ALLOW_IPS")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def clean_environment(**overrides: str) -> dict[str, str]:
    """This process's environment without the variables that configure LGOS, plus overrides."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(_OWNED_PREFIXES) and key not in _OWNED_NAMES
    }
    env.update(overrides)
    return env


class Process:
    """One started process: its output as it arrives, waits with deadlines, and its end."""

    def __init__(
        self,
        command: list[str],
        *,
        env: Mapping[str, str],
        cwd: Path = REPO,
        log: Path | None = None,
        name: str | None = None,
        own_group: bool = False,
    ) -> None:
        self.name = name or Path(command[0]).name
        self.log = log
        self.own_group = own_group
        self.stdout: list[str] = []
        self.stderr: list[str] = []
        self.base_url = ""
        self._changed = threading.Condition()
        self._sink: IO[str] | None = log.open("a", encoding="utf-8") if log else None
        self.popen = subprocess.Popen(
            command,
            cwd=cwd,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            errors="replace",
            # A group of its own when it starts children (run.sh scripts), so `stop` ends them.
            start_new_session=own_group,
        )
        self._readers = [
            threading.Thread(target=self._read, args=(self.popen.stdout, self.stdout), daemon=True),
            threading.Thread(target=self._read, args=(self.popen.stderr, self.stderr), daemon=True),
        ]
        for reader in self._readers:
            reader.start()

    # The name the earlier helpers used; the tests read `process.process.pid` and `.poll()`.
    @property
    def process(self) -> subprocess.Popen[str]:
        return self.popen

    def alive(self) -> bool:
        return self.popen.poll() is None

    def _read(self, stream: IO[str], lines: list[str]) -> None:
        for line in stream:
            with self._changed:
                lines.append(line.rstrip("\n"))
                if self._sink is not None:
                    self._sink.write(line)
                    self._sink.flush()
                self._changed.notify_all()
        with self._changed:
            self._changed.notify_all()

    def wait_for(self, condition: Callable[[], Any], timeout: float, what: str) -> Any:
        """Return `condition()` once it is truthy; fail when the process ends or time is up."""
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                result = condition()
                if result:
                    return result
                if not self.alive() and not any(reader.is_alive() for reader in self._readers):
                    result = condition()
                    if result:
                        return result
                    raise AssertionError(f"{self.name} exited before {what}:\n{self.output()}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(f"timed out waiting for {what}:\n{self.output()}")
                self._changed.wait(min(remaining, 1.0))

    def output(self, lines: int = 60) -> str:
        return "\n".join(
            [f"--- {self.name} stdout", *self.stdout[-lines:], "--- stderr", *self.stderr[-lines:]]
        )

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
        self,
        match: Callable[[dict[str, Any]], bool],
        timeout: float = START_TIMEOUT,
        count: int = 1,
    ) -> list[dict[str, Any]]:
        def found() -> list[dict[str, Any]] | None:
            hits = [record for record in self.records() if match(record)]
            return hits if len(hits) >= count else None

        return self.wait_for(found, timeout, "a matching log record")  # type: ignore[no-any-return]

    def wait_until_serving(self, timeout: float = START_TIMEOUT) -> str:
        """Wait for Uvicorn's "running on" line (printed once the app has started); the URL."""

        def running() -> str | None:
            for line in [*self.stdout, *self.stderr]:
                found = _RUNNING.search(line)
                if found:
                    return f"http://{found.group(1)}:{found.group(2)}"
            return None

        self.base_url = self.wait_for(running, timeout, "'Uvicorn running on'")
        return self.base_url

    def wait_http(
        self,
        url: str,
        timeout: float = START_TIMEOUT,
        headers: Mapping[str, str] | None = None,
        *,
        any_status: bool = False,
    ) -> None:
        """Poll `url` until it answers 200 (any status with `any_status`): for processes that
        are not Uvicorn's."""
        deadline = time.monotonic() + timeout
        last = "no answer"
        while time.monotonic() < deadline:
            if not self.alive():
                raise AssertionError(f"{self.name} exited before {url} answered:\n{self.output()}")
            try:
                status = httpx2.get(url, headers=dict(headers or {}), timeout=5).status_code
                if status == 200 or any_status:
                    return
                last = f"HTTP {status}"
            except httpx2.HTTPError as error:
                last = repr(error)
            with self._changed:  # woken early by new output; polling a condition with a deadline
                self._changed.wait(0.25)
        raise AssertionError(f"{self.name} not ready at {url} ({last}):\n{self.output()}")

    def _signal(self, signum: int) -> None:
        try:
            if self.own_group:
                os.killpg(self.popen.pid, signum)
            else:
                self.popen.send_signal(signum)
        except ProcessLookupError:
            pass

    def kill(self) -> None:
        """SIGKILL: no shutdown hooks run, database sessions just drop (a crash)."""
        if self.alive():
            self._signal(signal.SIGKILL)
        self.popen.wait(timeout=30)

    def stop(self, grace: float = 30.0, signum: int = signal.SIGTERM) -> int:
        """Ask the process to stop (SIGTERM), SIGKILL after `grace` seconds; its exit code."""
        if self.alive():
            self._signal(signum)
            try:
                self.popen.wait(timeout=grace)
            except subprocess.TimeoutExpired:
                self.kill()
        for reader in self._readers:
            reader.join(timeout=10)
        if self._sink is not None:
            self._sink.close()
            self._sink = None
        return self.popen.returncode


def lgos(command: str, *args: str, env: Mapping[str, str], cwd: Path = REPO, **kw: Any) -> Process:
    """`lgos serve|worker ARGS` from this environment."""
    return Process([LGOS, command, *args], env=env, cwd=cwd, name=f"lgos {command}", **kw)


def answering(
    command: list[str], env: Mapping[str, str], log: Path, ready: str, timeout: float
) -> Process:
    """`command` in a process group of its own (a launcher script and what it execs are
    stopped together), once `ready` answers 200; stopped again when it does not in time."""
    process = Process(command, env=env, cwd=REPO, log=log, name=log.stem, own_group=True)
    try:
        process.wait_http(ready, timeout=timeout)
    except BaseException:
        process.stop(grace=20)
        raise
    return process


@contextmanager
def serving(args: list[str], env: Mapping[str, str], cwd: Path = REPO) -> Iterator[Process]:
    """`lgos serve ARGS`, once Uvicorn runs; stopped at the end."""
    server = lgos("serve", *args, env=env, cwd=cwd)
    try:
        server.wait_until_serving()
        yield server
    finally:
        server.stop()


def run_to_exit(args: list[str], env: Mapping[str, str], cwd: Path = REPO) -> Process:
    """For start-ups that must fail: wait for the exit (killing it if it serves instead)."""
    server = lgos("serve", *args, env=env, cwd=cwd)
    try:
        server.popen.wait(timeout=START_TIMEOUT)
    except subprocess.TimeoutExpired:
        server.stop()
        raise AssertionError(f"the process did not exit:\n{server.output()}") from None
    server.stop()
    return server
