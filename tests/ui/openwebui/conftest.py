"""Fixtures for the Open WebUI browser tests.

The session starts real processes on free loopback ports and stops them at the end:
``lgos serve demo.registry:create_registry`` (in-memory background engine), Open WebUI from its
own environment (``demo/openwebui/run.sh``, data in a temporary folder), then the sync command.
The browser is Debian's Chromium (/usr/bin/chromium) driven by Playwright, with every request
that leaves the machine aborted.
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from owui_support import (
    CHROMIUM,
    CHROMIUM_ARGS,
    OFF_MACHINE,
    OPENWEBUI_DIR,
    REPO,
    Gateway,
    OpenWebUI,
    http_json,
    start,
)
from playwright.sync_api import Browser, Page, Playwright, expect

from tests.support.processes import free_port
from tests.support.timings import Timings

# Generous: the machine may be busy (2 cores), and Open WebUI renders after its socket connects.
expect.set_options(timeout=60_000)


@pytest.fixture(scope="session")
def lgos_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """Base URL (ending in /v1) of a real ``lgos serve`` with the demo graphs.

    OPENWEBUI_TEST_LGOS_URL points the tests at a server that is already running instead
    (e.g. the LiteLLM gateway of a running stack, with its key in OPENWEBUI_TEST_LGOS_KEY).
    """
    if os.environ.get("OPENWEBUI_TEST_LGOS_URL"):
        yield os.environ["OPENWEBUI_TEST_LGOS_URL"].rstrip("/")
        return
    port = free_port()
    log = tmp_path_factory.mktemp("lgos") / "lgos.log"
    lgos = Path(sys.executable).with_name("lgos")
    env = {**os.environ, "LGOS_BACKGROUND": "memory"}
    command = [str(lgos), "serve", "demo.registry:create_registry", "--host", "127.0.0.1"]
    process = start([*command, "--port", str(port)], log, env, f"http://127.0.0.1:{port}/v1/models")
    try:
        yield f"http://127.0.0.1:{port}/v1"
    finally:
        process.stop(grace=20)


@pytest.fixture(scope="session")
def lgos_key() -> str | None:
    """The key for ``lgos_url`` (a gateway's); None for LGOS itself."""
    return os.environ.get("OPENWEBUI_TEST_LGOS_KEY") or None


@pytest.fixture(scope="session")
def openwebui(lgos_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenWebUI]:
    """A running Open WebUI talking to ``lgos_url``, with the LGOS function and models synced."""
    # Idempotent: creates demo/openwebui/.venv on a fresh clone, else returns at once.
    subprocess.run([str(OPENWEBUI_DIR / "setup.sh")], check=True)
    server = OpenWebUI(tmp_path_factory.mktemp("openwebui"), lgos_url)
    try:
        sync = [
            sys.executable,
            str(OPENWEBUI_DIR / "sync.py"),
            "--url",
            server.url,
            "--lgos-url",
            lgos_url,
            "--lgos-key",
            os.environ.get("OPENWEBUI_TEST_LGOS_KEY", ""),
        ]
        # A short poll interval keeps the background tests quick; users keep the 1 s default.
        subprocess.run([*sync, "--poll-interval", "0.25"], check=True)
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def openwebui_url(openwebui: OpenWebUI) -> str:
    return openwebui.url


@pytest.fixture(scope="session")
def gateway(
    lgos_url: str, openwebui_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Gateway]:
    """A second Pipe, ``lgos_gateway``, reaching LGOS through a real LiteLLM proxy.

    LiteLLM comes from its own environment (demo/litellm, set up by its idempotent script) and
    its config in the repo; this is the path `just demo/up` wires Open WebUI to.
    """
    litellm = REPO / "demo" / "litellm"
    subprocess.run([str(litellm / "setup.sh")], check=True)
    port = free_port()
    key = "sk-openwebui-tests"
    env = {
        **os.environ,
        "LGOS_API_BASE_URL": lgos_url,
        "LITELLM_PORT": str(port),
        "LITELLM_MASTER_KEY": key,
    }
    log = tmp_path_factory.mktemp("litellm") / "litellm.log"
    ready = f"http://127.0.0.1:{port}/health/liveliness"
    process = start(["bash", str(litellm / "run.sh")], log, env, ready)
    gateway = f"http://127.0.0.1:{port}/v1"
    try:
        sync = [sys.executable, str(OPENWEBUI_DIR / "sync.py"), "--url", openwebui_url]
        options = ["--lgos-url", gateway, "--lgos-key", key, "--function-id", "lgos_gateway"]
        subprocess.run([*sync, *options, "--poll-interval", "0.25"], check=True)
        yield Gateway(function="lgos_gateway", url=gateway, key=key)
    finally:
        process.stop(grace=20)


@pytest.fixture(scope="session")
def idle_function(openwebui_url: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A third Pipe, ``lgos_idle``, on an LGOS that queues background runs on DBOS and has no
    worker at all: a run stays queued, as when every worker is down."""
    psycopg = pytest.importorskip("psycopg", reason="DBOS needs PostgreSQL (lgos[postgres])")
    admin = os.environ.get("LGOS_TEST_POSTGRES_ADMIN", "postgresql://postgres@127.0.0.1:5432")
    name = f"lgos_owui_idle_{secrets.token_hex(4)}"
    with psycopg.connect(f"{admin}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    log = tmp_path_factory.mktemp("lgos-idle") / "lgos.log"
    port = free_port()
    uri = f"{admin}/{name}"
    try:
        env = {**os.environ, "LGOS_BACKGROUND": "dbos", "LGOS_POSTGRES_URI": uri}
        lgos = Path(sys.executable).with_name("lgos")
        command = [str(lgos), "serve", "demo.registry:create_registry", "--host", "127.0.0.1"]
        url = f"http://127.0.0.1:{port}/v1"
        process = start([*command, "--port", str(port)], log, env, f"{url}/models")
        try:
            sync = [sys.executable, str(OPENWEBUI_DIR / "sync.py"), "--url", openwebui_url]
            subprocess.run([*sync, "--lgos-url", url, "--function-id", "lgos_idle"], check=True)
            yield "lgos_idle"
        finally:
            process.stop(grace=20)
    finally:
        with psycopg.connect(f"{admin}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture(scope="session")
def admin_token(openwebui_url: str) -> str:
    """Token of Open WebUI's single user (WEBUI_AUTH=false), an admin."""
    # Nothing else is prepared here: what the first page shows (no "What's New" modal) is
    # what sync.py left, as for a user of `just demo/up`.
    return str(
        http_json("POST", f"{openwebui_url}/api/v1/auths/signin", {"email": "", "password": ""})[
            "token"
        ]
    )


@pytest.fixture
def user_valves(openwebui_url: str, admin_token: str) -> Any:
    """Set the Pipe's user valves (what a user sets under Controls > Valves) for one test."""

    def set_valves(function: str = "lgos", **values: Any) -> None:
        http_json(
            "POST",
            f"{openwebui_url}/api/v1/functions/id/{function}/valves/user/update",
            {"run_in_background": False, **values},
            admin_token,
        )

    return set_valves


@pytest.fixture(scope="session")
def owui_browser(playwright: Playwright) -> Iterator[Browser]:
    """Debian's Chromium, launched from pytest-playwright's session-wide `playwright`.

    One Playwright per test session: a second `sync_playwright()` next to another test
    folder's would fail ("using Playwright Sync API inside the asyncio loop").
    """
    browser = playwright.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
    )
    yield browser
    browser.close()


@pytest.fixture
def page(owui_browser: Browser, admin_token: str) -> Iterator[Page]:
    """A fresh browser context per test (this folder's own, in place of pytest-playwright's)."""
    context = owui_browser.new_context(viewport={"width": 1280, "height": 800})
    # The UI asks CDNs for fonts and the like; fail those at once instead of waiting.
    context.route(OFF_MACHINE, lambda route: route.abort())
    page = context.new_page()
    yield page
    context.close()


@pytest.fixture(scope="session")
def timings() -> Iterator[Timings]:
    found = Timings("openwebui")
    yield found
    found.save()
