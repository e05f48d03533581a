"""A real Hatchet engine for the tests, started by the same bootstrap as the demo stack and
compose (scripts/hatchet-bootstrap.sh), on its own throwaway database and free ports.

`just setup` builds the engine (scripts/setup-hatchet.sh). Only where Go is absent do the Hatchet
tests skip, with that reason; on a machine with Go a missing build is an error, never a skip.
An engine given in the environment (HATCHET_CLIENT_TOKEN set) is used instead of starting one.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path

from psycopg.conninfo import conninfo_to_dict

from tests.support.postgres import temporary_database
from tests.support.processes import free_port

REPO = Path(__file__).resolve().parents[2]
BOOTSTRAP = REPO / "scripts" / "hatchet-bootstrap.sh"
SETUP = REPO / "scripts" / "setup-hatchet.sh"
# Migrations of a fresh database plus the engine's start on a busy 2-core machine.
START_TIMEOUT_SECONDS = 300
_PINNED = re.compile(r'^HATCHET_VERSION="\$\{HATCHET_VERSION:-(v[\d.]+)\}"$', re.MULTILINE)


def pinned_version() -> str:
    found = _PINNED.search(SETUP.read_text())
    assert found, "scripts/setup-hatchet.sh pins no HATCHET_VERSION"
    return found[1]


def bin_dir() -> Path:
    return REPO / ".cache" / "hatchet" / pinned_version() / "bin"


def unavailable_reason() -> str | None:
    """Why no engine can run here (None: one can). Only a machine without Go skips."""
    if os.environ.get("HATCHET_CLIENT_TOKEN"):
        return None
    if shutil.which("go") is None and not (bin_dir() / "hatchet-lite").exists():
        return "Hatchet engine: Go is not installed, so scripts/setup-hatchet.sh cannot build it"
    return None


def _database_url(conninfo: str) -> str:
    params = conninfo_to_dict(conninfo)
    user = params.get("user", "postgres")
    password = f":{params['password']}" if params.get("password") else ""
    host = params.get("host", "127.0.0.1")
    port = params.get("port", "5432")
    return f"postgresql://{user}{password}@{host}:{port}/{params['dbname']}?sslmode=disable"


def _settings(path: Path) -> dict[str, str]:
    lines = path.read_text().splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


def _bootstrap_up(env: dict[str, str], state_dir: Path) -> None:
    """Start the engine; on failure raise with what the bootstrap and the engine printed."""
    try:
        started = subprocess.run(
            ["bash", str(BOOTSTRAP), "up"],
            env=env,
            capture_output=True,
            text=True,
            timeout=START_TIMEOUT_SECONDS + 60,
            check=False,
        )
    except subprocess.TimeoutExpired as timeout:
        raise AssertionError(
            f"hatchet-bootstrap.sh up did not end in {timeout.timeout:.0f} s"
            f"{_engine_log(state_dir)}"
        ) from None
    if started.returncode != 0:
        raise AssertionError(
            f"hatchet-bootstrap.sh up failed:\n{started.stdout}\n{started.stderr}"
            f"{_engine_log(state_dir)}"
        )


def _engine_log(state_dir: Path, lines: int = 60) -> str:
    log = state_dir / "engine.log"
    if not log.exists():
        return ""
    tail = log.read_text(errors="replace").splitlines()[-lines:]
    return "\n--- the engine's log (last lines)\n" + "\n".join(tail)


@contextmanager
def running_engine(state_dir: Path, database_uri: str | None = None) -> Iterator[dict[str, str]]:
    """The client settings (HATCHET_CLIENT_*) of an engine that runs for the block, on a
    throwaway database of the shared server, or on `database_uri` (a fault test's cluster)."""
    if os.environ.get("HATCHET_CLIENT_TOKEN"):
        yield {key: value for key, value in os.environ.items() if key.startswith("HATCHET_")}
        return
    if not (bin_dir() / "hatchet-lite").exists():
        raise AssertionError(
            f"the Hatchet engine is not built in {bin_dir().relative_to(REPO)}: "
            "run `just setup` (scripts/setup-hatchet.sh)"
        )
    grpc, runtime = free_port(), free_port()
    database = (
        nullcontext(database_uri) if database_uri else temporary_database("lgos_test_hatchet")
    )
    with database as conninfo:
        env = {
            **os.environ,
            "DATABASE_URL": _database_url(conninfo),
            # The engine runs two pools (API and engine); the suite shares the server.
            "DATABASE_MAX_CONNS": "10",
            "HATCHET_STATE_DIR": str(state_dir),
            "HATCHET_BIN_DIR": str(bin_dir()),
            "SERVER_PORT": str(free_port()),
            "SERVER_GRPC_PORT": str(grpc),
            "SERVER_GRPC_BIND_ADDRESS": "127.0.0.1",
            "SERVER_GRPC_BROADCAST_ADDRESS": f"127.0.0.1:{grpc}",
            "SERVER_HEALTHCHECK_PORT": str(free_port()),
            "LITE_RUNTIME_PORT": str(runtime),
            "LITE_FRONTEND_PORT": str(free_port()),
            "SERVER_URL": f"http://127.0.0.1:{runtime}",
            "HATCHET_READY_TIMEOUT": str(START_TIMEOUT_SECONDS),
        }
        try:
            _bootstrap_up(env, state_dir)
            yield _settings(state_dir / "client.env")
        finally:
            subprocess.run(["bash", str(BOOTSTRAP), "down"], env=env, timeout=60, check=False)
