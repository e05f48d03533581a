"""The processes a durable measurement runs: LGOS deployments (`lgos serve` and, for the
durable engines, two `lgos worker`) serving the demo registry on a throwaway PostgreSQL database
each, the Hatchet engine's client settings, and their CPU accounting.

Set LGOS_BENCH_POSTGRES_ADMIN_URI to use another PostgreSQL server (default: the local one).
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections.abc import Iterable, Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from benchmarks.common import processes
from benchmarks.common.machine import REPO

PYTHON = sys.executable
LGOS = str(Path(sys.executable).parent / "lgos")
REGISTRY = "demo.registry:create_registry"
ADMIN_URI = os.environ.get(
    "LGOS_BENCH_POSTGRES_ADMIN_URI", "postgresql://postgres@127.0.0.1:5432/postgres"
)
_RUNNING = re.compile(r"Uvicorn running on (http://[\d.]+:\d+)")


def stop_children_on_sigterm() -> None:
    """Make SIGTERM (from `timeout` or `kill`) unwind this process like Ctrl-C does, so the
    `with` blocks that started servers, workers and engines stop them: by default Python ends
    at once and leaves them running, orphaned, loading the machine for later measurements."""
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(128 + signal.SIGTERM))


class Process:
    def __init__(
        self, args: list[str], env: dict[str, str], program: str = LGOS, cwd: Path = REPO
    ) -> None:
        self.popen = subprocess.Popen(
            [program, *args],
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        self.lines: list[str] = []
        self._seen = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.popen.stdout is not None
        for line in self.popen.stdout:
            with self._seen:
                self.lines.append(line)
                self._seen.notify_all()

    def wait_for(self, pattern: str, timeout: float = 120.0) -> str:
        deadline = time.monotonic() + timeout
        with self._seen:
            while True:
                for line in self.lines:
                    found = re.search(pattern, line)
                    if found:
                        return found.group(1) if found.groups() else line
                if self.popen.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("process failed to start:\n" + "".join(self.lines[-40:]))
                self._seen.wait(1.0)

    def stop(self) -> None:
        processes.stop(self.popen, grace=30)


@contextmanager
def database() -> Iterator[str]:
    name = f"lgos_bench_bg_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(ADMIN_URI, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    params = conninfo_to_dict(ADMIN_URI)
    params["dbname"] = name
    try:
        yield make_conninfo(**params)
    finally:
        with psycopg.connect(ADMIN_URI, autocommit=True) as conn:
            conn.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


def dbos_url(conninfo: str) -> str:
    """The database as the SQLAlchemy URL DBOS takes, on the psycopg 3 driver."""
    from sqlalchemy.engine import URL

    params = conninfo_to_dict(conninfo)
    port = params.get("port")
    return URL.create(
        "postgresql+psycopg",
        username=params.get("user"),
        password=params.get("password"),
        host=params.get("host"),
        port=int(port) if port else None,
        database=params.get("dbname"),
    ).render_as_string(hide_password=False)


def environment(**values: str) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("LGOS_")}
    env.update(values, PYTHONUNBUFFERED="1")
    return env


@contextmanager
def exported(values: dict[str, str]) -> Iterator[None]:
    """`values` in this process's environment for the block (a Hatchet client here reads its
    settings from it), then the environment as it was.

    Left set, a stopped engine's HATCHET_CLIENT_* would outlive it: `engine_settings` (through
    `tests.support.hatchet.running_engine`) takes a HATCHET_CLIENT_TOKEN in the environment for
    an engine given from outside, so the next engine would not be started and its deployment
    would dial the stopped one (the webhook part of `just bench-durable` did, and crashed)."""
    before = {name: os.environ.get(name) for name in values}
    os.environ.update(values)
    try:
        yield
    finally:
        for name, value in before.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value


@contextmanager
def engine_settings(engine: str) -> Iterator[dict[str, str]]:
    """Client settings of the engine's own service (only Hatchet has one)."""
    if engine != "hatchet":
        yield {}
        return
    from tests.support import hatchet

    with (
        tempfile.TemporaryDirectory(prefix="lgos-bench-hatchet-") as state,
        hatchet.running_engine(Path(state)) as settings,
    ):
        yield settings


@contextmanager
def started(processes: list[Process], ready: str) -> Iterator[list[Process]]:
    try:
        for process in processes:
            process.wait_for(ready, timeout=300)
        yield processes
    finally:
        for process in processes:
            process.stop()


@dataclass
class Deployment:
    engine: str
    base_url: str
    uri: str
    processes: list[Process]


def cpu_seconds(processes: list[Process]) -> float:
    """User + system CPU of these processes and their children (Hatchet's worker forks)."""
    return tree_cpu_seconds(process.popen.pid for process in processes)


def tree_cpu_seconds(pids: Iterable[int]) -> float:
    """User + system CPU of the processes with these ids and their children."""
    import psutil  # a harness tool (benchmarks/requirements.txt), needed only to measure CPU

    total = 0.0
    for pid in pids:
        try:
            root = psutil.Process(pid)
            for one in (root, *root.children(recursive=True)):
                times = one.cpu_times()
                total += times.user + times.system
        except psutil.NoSuchProcess:
            continue
    return total


@contextmanager
def lgos_deployment(
    engine: str, stack: ExitStack, settings: dict[str, str]
) -> Iterator[Deployment]:
    uri = stack.enter_context(database())
    env = environment(
        LGOS_BACKGROUND=engine,
        LGOS_POSTGRES_URI=uri,
        LGOS_INTERRUPT_SWEEP_INTERVAL_MINUTES="0",
        **settings,
    )
    api = Process(["serve", REGISTRY, "--port", "0"], env)
    workers = []
    if engine != "memory":
        workers = [
            Process(["worker", REGISTRY], {**env, "LGOS_WORKER_ID": f"bench-{engine}-{index}"})
            for index in range(2)
        ]
    try:
        base_url = api.wait_for(_RUNNING.pattern, timeout=300)
        with started(workers, r'"message": "worker\.started"'):
            yield Deployment(engine, base_url, uri, [api, *workers])
    finally:
        api.stop()


def print_server_errors(deployments: dict[str, Deployment]) -> None:
    """A failed step shows what the servers logged as errors (their output is kept, not
    printed), so a 5xx seen by the client comes with the server's own record of it."""
    for deployment in deployments.values():
        for index, process in enumerate(deployment.processes):
            errors = [line for line in process.lines if '"level": "error"' in line]
            for line in errors[-5:]:
                print(f"{deployment.engine} process {index}: {line.rstrip()}", file=sys.stderr)
