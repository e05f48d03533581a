"""Helpers shared by the Open WebUI tests: paths, processes, HTTP calls, screenshots.

A module of its own (not conftest.py) so that the test modules can import it by a name no other
test folder of the repository uses.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from playwright.sync_api import Page, expect

from tests.support.openwebui_page import http_json as http_json
from tests.support.processes import LGOS, Process, answering, free_port

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[2]
OPENWEBUI_DIR = REPO / "demo" / "openwebui"
# The gitignored build folder; `just docs-images` copies the pictures to docs/img/openwebui.
SCREENSHOTS = REPO / "build" / "screenshots" / "openwebui"
START_DEADLINE = 240.0  # seconds; Open WebUI takes 15-30 s to start on 2 cores, more when busy


@dataclass(frozen=True)
class Gateway:
    """The LiteLLM proxy of the session and the Pipe function that goes through it."""

    function: str
    url: str
    key: str


def stored_chat(url: str, token: str, page: Page) -> dict[str, Any]:
    """The chat of the page as Open WebUI stored it."""
    expect(page).to_have_url(re.compile(r"/c/[0-9a-f-]+"))
    chat_id = page.url.rstrip("/").rsplit("/", 1)[-1]
    return dict(http_json("GET", f"{url}/api/v1/chats/{chat_id}", token=token)["chat"])


def last_message(url: str, token: str, page: Page) -> dict[str, Any]:
    """The chat's last message as Open WebUI stored it (content, status history)."""
    chat = stored_chat(url, token, page)
    return dict(chat["history"]["messages"][chat["history"]["currentId"]])


def start(command: list[str], log: Path, env: dict[str, str], ready_url: str) -> Process:
    """Start `command` in a process group of its own (run.sh execs Open WebUI, so teardown
    stops the whole group) and wait until `ready_url` answers 200."""
    return answering(command, env, log, ready_url, START_DEADLINE)


def screenshot(page: Page, flow: str) -> None:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    # Toasts ("You're now logged in.") come and go on their own; keep them out of the picture.
    page.screenshot(
        path=str(SCREENSHOTS / f"{flow}.png"),
        style="[data-sonner-toaster] { display: none !important; }",
    )


@dataclass
class IdleStack:
    """An LGOS on DBOS whose one worker a test starts and stops (`lgos_idle_*` Pipes)."""

    server: Process
    env: dict[str, str]
    log: Path
    worker: Process | None = None

    def start_worker(self) -> None:
        command = [LGOS, "worker", "demo.registry:create_registry"]
        self.worker = Process(command, env=self.env, cwd=REPO, log=self.log, name="lgos worker")
        self.worker.wait_for(
            lambda: any("worker.started" in line for line in self.worker.stdout),  # type: ignore[union-attr]
            timeout=240,
            what="worker.started",
        )

    def stop_worker(self) -> None:
        if self.worker is not None:
            self.worker.stop(grace=30)
            self.worker = None

    def stop(self) -> None:
        self.stop_worker()
        self.server.stop(grace=20)


class OpenWebUI:
    """The session's Open WebUI process, which a test may restart on the same port and data."""

    def __init__(self, data: Path, lgos_url: str) -> None:
        self.data = data
        self.url = f"http://127.0.0.1:{free_port()}"
        self.env = {
            **os.environ,
            "OPENWEBUI_DATA_DIR": str(data / "data"),
            "OPENWEBUI_PORT": self.url.rsplit(":", 1)[1],
            "LGOS_BASE_URL": lgos_url,
            # LGOS's MCP endpoint as Open WebUI's tool server, as `just demo/openwebui` sets it.
            "LGOS_MCP_URL": lgos_url.removesuffix("/v1") + "/mcp",
        }
        self.process = self._start()

    def _start(self) -> Process:
        log = self.data / "openwebui.log"
        return start([str(OPENWEBUI_DIR / "run.sh")], log, self.env, f"{self.url}/health")

    def log_tail(self, lines: int = 80) -> str:
        return self.process.output(lines)

    def restart(self) -> None:
        self.process.stop(grace=20)
        self.process = self._start()

    def stop(self) -> None:
        self.process.stop(grace=20)


def pdf_with_text(text: str) -> bytes:
    """A one-page PDF that says `text`, with the cross-reference table PDF readers look up
    (Open WebUI extracts the text of an upload and warns about a PDF without one)."""
    stream = f"BT /F1 18 Tf 20 40 Td ({text}) Tj ET".encode()
    objects = [
        b"<</Type/Catalog/Pages 2 0 R>>",
        b"<</Type/Pages/Kids[3 0 R]/Count 1>>",
        b"<</Type/Page/Parent 2 0 R/MediaBox[0 0 300 100]/Contents 4 0 R"
        b"/Resources<</Font<</F1 5 0 R>>>>>>",
        b"<</Length %d>>stream\n%s\nendstream" % (len(stream), stream),
        b"<</Type/Font/Subtype/Type1/BaseFont/Helvetica>>",
    ]
    body = b"%PDF-1.4\n"
    offsets = []
    for number, content in enumerate(objects, 1):
        offsets.append(len(body))
        body += b"%d 0 obj\n%s\nendobj\n" % (number, content)
    xref = len(body)
    body += b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1)
    body += b"".join(b"%010d 00000 n \n" % offset for offset in offsets)
    body += b"trailer<</Size %d/Root 1 0 R>>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref)
    return body
