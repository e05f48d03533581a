"""Helpers shared by the Open WebUI tests: paths, processes, HTTP calls, screenshots.

A module of its own (not conftest.py) so that the test modules can import it by a name no other
test folder of the repository uses.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playwright.sync_api import Page

HERE = Path(__file__).resolve().parent
OPENWEBUI_DIR = HERE.parent
REPO = OPENWEBUI_DIR.parent.parent
# Gitignored: `just docs-images` copies them into docs/img/openwebui/ for the docs pages.
SCREENSHOTS = REPO / "build" / "screenshots" / "openwebui"
CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
# Root needs --no-sandbox; the rest keep Chromium from calling Google's services.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
OFF_MACHINE = re.compile(r"^https?://(?!127\.0\.0\.1|localhost)")
START_DEADLINE = 240.0  # seconds; Open WebUI takes 15-30 s to start on 2 cores, more when busy


@dataclass(frozen=True)
class Gateway:
    """The LiteLLM proxy of the session and the Pipe function that goes through it."""

    function: str
    url: str
    key: str


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def http_json(method: str, url: str, body: Any = None, token: str | None = None) -> Any:
    request = urllib.request.Request(
        url, data=None if body is None else json.dumps(body).encode(), method=method
    )
    request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    with urllib.request.urlopen(request, timeout=30) as response:
        return json.loads(response.read().decode() or "null")


def wait_for(url: str, process: subprocess.Popen[bytes], log: Path) -> None:
    """Poll ``url`` until it answers 200, failing early if the process died."""
    deadline = time.monotonic() + START_DEADLINE
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(
                f"process exited with {process.returncode}:\n{log.read_text()[-3000:]}"
            )
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                if response.status == 200:
                    return
        except (OSError, urllib.error.URLError):
            pass
        time.sleep(0.25)
    raise TimeoutError(
        f"{url} did not answer within {START_DEADLINE} s:\n{log.read_text()[-3000:]}"
    )


def start(command: list[str], log: Path, env: dict[str, str]) -> subprocess.Popen[bytes]:
    # A new session, so that teardown stops the whole process group (run.sh execs Open WebUI).
    with log.open("wb") as out:
        return subprocess.Popen(
            command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
        )


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def screenshot(page: Page, flow: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    # Toasts ("You're now logged in.") come and go on their own; keep them out of the picture.
    page.screenshot(
        path=str(SCREENSHOTS / f"{flow}.png"),
        style="[data-sonner-toaster] { display: none !important; }",
    )


class Timings:
    """Send → visible times of the flows the docs report, written to build/timings/.

    Measured, never asserted: the machine's load decides them.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self.rows: list[tuple[str, float]] = []

    def record(self, step: str, started: float) -> None:
        self.rows.append((step, round(time.monotonic() - started, 2)))

    def save(self) -> None:
        if not self.rows:
            return
        folder = REPO / "build" / "timings"
        folder.mkdir(parents=True, exist_ok=True)
        with (folder / f"{self.name}.jsonl").open("a") as out:
            for step, seconds in self.rows:
                out.write(json.dumps({"step": step, "seconds": seconds}) + "\n")
