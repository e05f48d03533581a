"""Start the demo stack as plain local processes, for the live suites.

When no base URL is given, the suites bring up what they need themselves:

* a fresh PostgreSQL database (created with ``psql`` on the machine's server,
  dropped at the end),
* ``lgos serve demo.registry:create_registry`` on a free loopback port,
* one ``lgos worker`` when the background engine needs workers (Hatchet, DBOS),
* for Hatchet, the engine itself, started by scripts/hatchet-bootstrap.sh (as
  ``just demo/hatchet-up`` and compose do) on its own database,
* the LiteLLM proxy from ``demo/litellm`` in front of the API.

Every process is a `tests.support.processes.Process` in a session of its own, so it is
stopped with its children; its output goes to a log file and is shown when it fails to start.
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import uuid
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path

from tests.support import hatchet
from tests.support.processes import LGOS, Process, free_port

# The suites only ever talk to a proxy they started themselves with the development key of
# demo/litellm/run.sh, or to one given by DEMO_API_KEY; the API takes the gateway's key.
from tests.support.stack_auth import API_AUTH, GATEWAY_LGOS_KEY, LITELLM_DEV_KEY

REPO = Path(__file__).resolve().parents[2]
LITELLM_DIR = REPO / "demo" / "litellm"
REGISTRY = "demo.registry:create_registry"


# Generous: LiteLLM imports for ~11 s on an idle 2-core machine and about
# twice that while other work runs.
START_TIMEOUT = float(os.environ.get("DEMO_STACK_START_TIMEOUT") or "180")


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
        proc = Process(
            cmd,
            env={**os.environ, **env},
            cwd=cwd,
            log=self.workdir / f"{name}.log",
            name=name,
            own_group=True,
        )
        self.processes.append(proc)
        return proc

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
                "environment: run `uv run --extra postgres --extra dbos pytest tests/live` "
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
            [LGOS, "serve", REGISTRY, "--host", "127.0.0.1", "--port", str(port)],
            {**env, **API_AUTH},
        )
        self.api_url = f"http://127.0.0.1:{port}/v1"
        api.wait_http(f"{self.api_url}/models", START_TIMEOUT)
        if self.background not in ("memory", "none"):
            worker = self.spawn(
                "worker",
                [LGOS, "worker", REGISTRY],
                {**env, "LGOS_WORKER_ID": f"live-{uuid.uuid4().hex[:8]}"},
            )
            # A worker has no HTTP port; it says when it takes runs (a Hatchet trigger
            # needs a worker that registered the task). `diagnostics()` shows its log
            # when a background test times out.
            worker.wait_for_record(
                lambda record: record.get("message") == "worker.started", START_TIMEOUT
            )

    def start_litellm(self) -> None:
        subprocess.run(["bash", str(LITELLM_DIR / "setup.sh")], check=True)
        port = free_port()
        env = {
            "LGOS_API_BASE_URL": self.api_url,
            "LITELLM_PORT": str(port),
            "LITELLM_HOST": "127.0.0.1",
            "LITELLM_MASTER_KEY": self.gateway_key,
            "LGOS_API_KEY": GATEWAY_LGOS_KEY,
        }
        proxy = self.spawn("litellm", ["bash", str(LITELLM_DIR / "run.sh")], env)
        self.gateway_url = f"http://127.0.0.1:{port}/v1"
        # Readiness, not just liveliness: the model list is loaded from the config.
        proxy.wait_http(f"http://127.0.0.1:{port}/health/readiness", START_TIMEOUT)

    def diagnostics(self) -> str:
        """The last log lines of every process, for failure messages."""
        parts = []
        for proc in self.processes:
            state = "running" if proc.alive() else f"exited {proc.popen.returncode}"
            parts.append(f"--- {proc.name} ({state}) ---\n{proc.output(30)}")
        return "\n".join(parts)

    def close(self) -> None:
        for proc in reversed(self.processes):
            proc.stop()
        self.processes.clear()
        self.resources.close()
        self.drop_database()
