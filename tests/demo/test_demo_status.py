"""`just demo/status`: every piece of the local stack, the engine included, with its readiness
and the command that fixes it.

The recipe reads the pid files and logs `just demo/up` leaves in demo/.run. A copy of the
justfile in a temporary checkout keeps this test off the real one (and off a stack someone runs):
its pieces are stand-ins, a live process per pid file and, for the API, a loopback HTTP server.
"""

from __future__ import annotations

import http.server
import os
import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.processes import free_port

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    shutil.which("just") is None or shutil.which("psql") is None, reason="needs just and psql"
)


class _Models(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        self.send_response(200 if self.path.endswith("/models") else 404)
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def api_port() -> Iterator[int]:
    """A loopback server answering /v1/models as a running API does."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Models)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server.server_address[1]
    finally:
        server.shutdown()


def status(checkout: Path, env: dict[str, str]) -> dict[str, list[str]]:
    """The rows of `just demo/status` in `checkout`, by piece: [pid, state, URL, fix]."""
    done = subprocess.run(
        ["just", "--justfile", str(checkout / "demo" / "justfile"), "status"],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, **env},
        check=True,
    )
    lines = done.stdout.splitlines()
    assert lines[0].split() == ["piece", "pid", "state", "URL", "if", "not", "ready"], done.stdout
    rows = {}
    for line in lines[1:]:
        name, *cells = re.split(r"\s{2,}", line.rstrip())
        rows[name] = cells
    return rows


def test_status_lists_every_piece_with_its_readiness_and_fix(
    tmp_path: Path, api_port: int, alive: int
) -> None:
    (tmp_path / "demo").mkdir()
    shutil.copy(ROOT / "demo" / "justfile", tmp_path / "demo" / "justfile")
    run = tmp_path / "demo" / ".run"
    run.mkdir()
    closed = str(free_port())  # nothing listens there
    env = {
        "LGOS_BACKGROUND": "hatchet",
        "LGOS_API_PORT": str(api_port),
        "LITELLM_PORT": closed,
        "CHAINLIT_PORT": closed,
        "OPENWEBUI_PORT": closed,
        "HATCHET_UI_PORT": closed,
        "HATCHET_HEALTH_PORT": closed,
    }
    # The API runs and answers; a worker runs but has not said it takes runs; LiteLLM runs
    # without answering; Chainlit's process is gone; Open WebUI was never started.
    for name in ("api", "worker", "litellm"):
        (run / f"{name}.pid").write_text(str(alive))
    (run / "worker.log").write_text("connecting to the engine\n")
    (run / "chainlit.pid").write_text("999999999")

    rows = status(tmp_path, env)
    assert list(rows) == [
        "postgres",
        "hatchet",
        "api",
        "worker",
        "litellm",
        "chainlit",
        "openwebui",
    ]
    assert rows["postgres"][1] == "ready"
    # The engine is a row of its own, with the command that starts it.
    assert rows["hatchet"][1:] == ["not started", "-", "just demo/hatchet-up"]
    assert rows["api"] == [str(alive), "ready", f"http://127.0.0.1:{api_port}/v1"]
    # A live process is not a ready piece: the worker is ready once it logs worker.started.
    assert rows["worker"] == [str(alive), "not ready", "-", "just demo/worker"]
    litellm = ["not ready", f"http://127.0.0.1:{closed}/v1", "just demo/litellm"]
    assert rows["litellm"][1:] == litellm
    assert rows["chainlit"][1:] == ["stopped", f"http://127.0.0.1:{closed}", "just demo/chainlit"]
    assert rows["openwebui"][:2] == ["-", "not started"]
    assert rows["openwebui"][-1] == "just demo/openwebui"

    (run / "worker.log").write_text("connecting to the engine\nworker.started\n")
    assert status(tmp_path, env)["worker"] == [str(alive), "ready", "-"]

    # Without an engine process (DBOS) the row says which engine runs the background.
    assert status(tmp_path, {**env, "LGOS_BACKGROUND": "dbos"})["engine"][1] == "dbos"
