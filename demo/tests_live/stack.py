"""Start the demo stack as plain local processes, for the live suites.

When no base URL is given, the suites bring up what they need themselves:

* a fresh PostgreSQL database (created with ``psql`` on the machine's server,
  dropped at the end),
* ``lgos serve demo.registry:create_registry`` on a free loopback port,
* one ``lgos worker`` when the background engine needs workers (Hatchet, DBOS),
* for Hatchet, the engine itself, started by scripts/hatchet-bootstrap.sh (as
  ``just demo/hatchet-up`` and compose do) on its own database,
* the LiteLLM proxy from ``demo/litellm`` in front of the API.

Every process gets its own session so it can be stopped by its process id,
and its output goes to a log file that is printed when it fails to start.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from tests.support import hatchet

REPO = Path(__file__).resolve().parents[2]
LITELLM_DIR = REPO / "demo" / "litellm"
REGISTRY = "demo.registry:create_registry"

# The development key of demo/litellm/run.sh; the suites only ever talk to a
# proxy they started themselves with it, or to one given by DEMO_API_KEY.
LITELLM_DEV_KEY = "sk-lgos-dev-not-a-secret"

# Generous: LiteLLM imports for ~11 s on an idle 2-core machine and about
# twice that while other work runs.
START_TIMEOUT = float(os.environ.get("DEMO_STACK_START_TIMEOUT") or "180")


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def lgos_command() -> list[str]:
    """The `lgos` console script of the environment running the tests."""
    script = Path(sys.executable).with_name("lgos")
    if script.exists():
        return [str(script)]
    found = shutil.which("lgos")
    if found is None:
        raise RuntimeError("the `lgos` command is not installed in this environment")
    return [found]


@dataclass
class Process:
    """One started process and its log file."""

    name: str
    popen: subprocess.Popen[bytes]
    log: Path

    def alive(self) -> bool:
        return self.popen.poll() is None

    def tail(self, lines: int = 60) -> str:
        try:
            text = self.log.read_text(errors="replace")
        except OSError:
            return ""
        return "\n".join(text.splitlines()[-lines:])

    def stop(self) -> None:
        """SIGTERM the process group we created, then SIGKILL after a grace period."""
        if not self.alive():
            return
        pgid = self.popen.pid  # start_new_session=True: the pid is the group id
        try:
            os.killpg(pgid, signal.SIGTERM)
            self.popen.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(pgid, signal.SIGKILL)
            self.popen.wait(timeout=15)
        except ProcessLookupError:
            pass


@dataclass
class LocalStack:
    """Processes started for one test session; `close()` stops them all."""

    workdir: Path
    background: str = "dbos"
    admin_uri: str = "postgresql://postgres@127.0.0.1:5432/postgres"
    processes: list[Process] = field(default_factory=list)
    database: str | None = None
    api_url: str = ""
    gateway_url: str = ""
    gateway_key: str = LITELLM_DEV_KEY
    # What outlives the processes: the Hatchet engine, stopped after API and worker.
    resources: ExitStack = field(default_factory=ExitStack)

    # ------------------------------------------------------------ processes
    def spawn(self, name: str, cmd: list[str], env: dict[str, str], cwd: Path = REPO) -> Process:
        log = self.workdir / f"{name}.log"
        with log.open("wb") as out:
            popen = subprocess.Popen(
                cmd,
                cwd=cwd,
                env={**os.environ, **env},
                stdout=out,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        proc = Process(name, popen, log)
        self.processes.append(proc)
        return proc

    def wait_http(self, proc: Process, url: str, headers: dict[str, str] | None = None) -> None:
        """Poll `url` until it answers 200, the process dies, or time runs out."""
        deadline = time.monotonic() + START_TIMEOUT
        last = "no answer"
        while time.monotonic() < deadline:
            if not proc.alive():
                raise RuntimeError(f"{proc.name} exited early:\n{proc.tail()}")
            try:
                resp = httpx.get(url, headers=headers, timeout=5)
                if resp.status_code == 200:
                    return
                last = f"HTTP {resp.status_code}"
            except httpx.HTTPError as exc:
                last = repr(exc)
            time.sleep(0.25)
        raise RuntimeError(f"{proc.name} not ready at {url} ({last}):\n{proc.tail()}")

    # ------------------------------------------------------------- database
    def psql(self, sql: str) -> None:
        subprocess.run(
            ["psql", self.admin_uri, "-v", "ON_ERROR_STOP=1", "-q", "-c", sql],
            check=True,
            capture_output=True,
        )

    def create_database(self) -> str:
        self.database = f"lgos_live_{uuid.uuid4().hex[:12]}"
        self.psql(f'CREATE DATABASE "{self.database}"')
        base = self.admin_uri.rsplit("/", 1)[0]
        return f"{base}/{self.database}"

    def drop_database(self) -> None:
        if self.database:
            self.psql(f'DROP DATABASE IF EXISTS "{self.database}" WITH (FORCE)')
            self.database = None

    # ---------------------------------------------------------------- start
    def start_api(self) -> None:
        if self.background == "dbos" and importlib.util.find_spec("dbos") is None:
            raise RuntimeError(
                "the local stack runs background work on DBOS, which is not installed in this "
                "environment: run `uv run --extra postgres --extra dbos pytest demo/tests_live` "
                "(or set DEMO_STACK_BACKGROUND=memory for a single-process API)"
            )
        env = {"LGOS_BACKGROUND": self.background}
        if self.background == "hatchet":
            env.update(
                self.resources.enter_context(hatchet.running_engine(self.workdir / "hatchet"))
            )
        if self.background != "memory":
            # Workers and API share the run state through PostgreSQL.
            env["LGOS_POSTGRES_URI"] = self.create_database()
        port = free_port()
        api = self.spawn(
            "api",
            [*lgos_command(), "serve", REGISTRY, "--host", "127.0.0.1", "--port", str(port)],
            env,
        )
        self.api_url = f"http://127.0.0.1:{port}/v1"
        self.wait_http(api, f"{self.api_url}/models")
        if self.background not in ("memory", "none"):
            worker = self.spawn(
                "worker",
                [*lgos_command(), "worker", REGISTRY],
                {**env, "LGOS_WORKER_ID": f"live-{uuid.uuid4().hex[:8]}"},
            )
            # A worker has no HTTP port: the background tests prove it runs jobs,
            # and `diagnostics()` shows its log when one of them times out.
            if not worker.alive():
                raise RuntimeError(f"worker exited early:\n{worker.tail()}")

    def start_litellm(self) -> None:
        subprocess.run(["bash", str(LITELLM_DIR / "setup.sh")], check=True)
        port = free_port()
        env = {
            "LGOS_API_BASE_URL": self.api_url,
            "LITELLM_PORT": str(port),
            "LITELLM_HOST": "127.0.0.1",
            "LITELLM_MASTER_KEY": self.gateway_key,
        }
        proxy = self.spawn("litellm", ["bash", str(LITELLM_DIR / "run.sh")], env)
        self.gateway_url = f"http://127.0.0.1:{port}/v1"
        # Readiness, not just liveliness: the model list is loaded from the config.
        self.wait_http(
            proxy,
            f"http://127.0.0.1:{port}/health/readiness",
        )

    def diagnostics(self) -> str:
        """The last log lines of every process, for failure messages."""
        parts = []
        for proc in self.processes:
            state = "running" if proc.alive() else f"exited {proc.popen.returncode}"
            parts.append(f"--- {proc.name} ({state}) ---\n{proc.tail(30)}")
        return "\n".join(parts)

    def close(self) -> None:
        for proc in reversed(self.processes):
            proc.stop()
        self.processes.clear()
        self.resources.close()
        self.drop_database()
