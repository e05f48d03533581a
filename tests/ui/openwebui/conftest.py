"""Fixtures for the Open WebUI browser tests.

The session starts real processes on free loopback ports and stops them at the end:
``lgos serve demo.registry:create_registry`` (in-memory background engine), Open WebUI from its
own environment (``demo/openwebui/run.sh``, data in a temporary folder), then the sync command.
The browser is Debian's Chromium (/usr/bin/chromium) driven by Playwright, with every request
that leaves the machine aborted.

Each service starts with its own deadline, outside any test's timeout (the tests time only their
body), and a service that does not start fails the first test that needs it, with its log, and
skips the others (tests/support/started.py).
"""

from __future__ import annotations

import os
import secrets
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from owui_support import (
    OPENWEBUI_DIR,
    REPO,
    Gateway,
    IdleStack,
    OpenWebUI,
    http_json,
    start,
)
from playwright.sync_api import Browser, Page, Playwright, expect

from tests.support.browser import launch_chromium, loopback_context
from tests.support.processes import free_port
from tests.support.started import StartFailure, require, start_once
from tests.support.timings import Timings

# Generous: the machine may be busy (2 cores), and Open WebUI renders after its socket connects.
expect.set_options(timeout=60_000)


@pytest.fixture(scope="session")
def lgos_service(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str | StartFailure]:
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
    url = f"http://127.0.0.1:{port}/v1"
    env = {**os.environ, "LGOS_BACKGROUND": "memory", "DEMO_CORPUS_URL": f"{url[:-3]}/corpus"}
    command = [str(lgos), "serve", "demo.registry:create_registry", "--host", "127.0.0.1"]
    process = start_once(
        "lgos serve", lambda: start([*command, "--port", str(port)], log, env, f"{url}/models")
    )
    if isinstance(process, StartFailure):
        yield process
        return
    try:
        yield url
    finally:
        process.stop(grace=20)


@pytest.fixture
def lgos_url(lgos_service: str | StartFailure) -> str:
    return require(lgos_service)


@pytest.fixture(scope="session")
def lgos_key() -> str | None:
    """The key for ``lgos_url`` (a gateway's); None for LGOS itself."""
    return os.environ.get("OPENWEBUI_TEST_LGOS_KEY") or None


def run_step(command: list[str], timeout: float) -> None:
    """One set-up command with its own deadline; its output is the failure's message."""
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise RuntimeError(
            f"{' '.join(command)} exited {done.returncode}:\n{done.stdout}{done.stderr}"
        )


@pytest.fixture(scope="session")
def openwebui_service(
    lgos_service: str | StartFailure, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[OpenWebUI | StartFailure]:
    """A running Open WebUI talking to LGOS, with the LGOS functions and models synced."""
    if isinstance(lgos_service, StartFailure):
        yield lgos_service
        return
    lgos_url = lgos_service

    def launch() -> OpenWebUI:
        # Idempotent: creates demo/openwebui/.venv on a fresh clone, else returns at once.
        run_step([str(OPENWEBUI_DIR / "setup.sh")], timeout=1800)
        server = OpenWebUI(tmp_path_factory.mktemp("openwebui"), lgos_url)
        try:
            sync = [sys.executable, str(OPENWEBUI_DIR / "sync.py"), "--url", server.url]
            key = os.environ.get("OPENWEBUI_TEST_LGOS_KEY", "")
            # A short poll interval keeps the background tests quick; users keep the 1 s default.
            options = ["--lgos-url", lgos_url, "--lgos-key", key, "--poll-interval", "0.25"]
            run_step([*sync, *options], timeout=300)
        except BaseException as error:
            server.stop()
            raise RuntimeError(f"{error}\n--- Open WebUI log\n{server.log_tail()}") from error
        return server

    server = start_once("Open WebUI", launch)
    if isinstance(server, StartFailure):
        yield server
        return
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def openwebui(openwebui_service: OpenWebUI | StartFailure) -> OpenWebUI:
    return require(openwebui_service)


@pytest.fixture
def openwebui_url(openwebui: OpenWebUI) -> str:
    return openwebui.url


@pytest.fixture(scope="session")
def gateway_service(
    lgos_service: str | StartFailure,
    openwebui_service: OpenWebUI | StartFailure,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[Gateway | StartFailure]:
    """A second set of Pipes, ``lgos_gateway_*``, reaching LGOS through a real LiteLLM proxy.

    LiteLLM comes from its own environment (demo/litellm, set up by its idempotent script) and
    its config in the repo; this is the path `just demo/up` wires Open WebUI to.
    """
    for needed in (lgos_service, openwebui_service):
        if isinstance(needed, StartFailure):
            yield needed
            return
    assert isinstance(lgos_service, str)
    assert isinstance(openwebui_service, OpenWebUI)
    litellm = REPO / "demo" / "litellm"
    port = free_port()
    key = "sk-openwebui-tests"
    env = {
        **os.environ,
        "LGOS_API_BASE_URL": lgos_service,
        "LITELLM_PORT": str(port),
        "LITELLM_MASTER_KEY": key,
    }
    log = tmp_path_factory.mktemp("litellm") / "litellm.log"
    ready = f"http://127.0.0.1:{port}/health/liveliness"
    url = f"http://127.0.0.1:{port}/v1"

    def launch() -> Any:
        run_step([str(litellm / "setup.sh")], timeout=1800)
        process = start(["bash", str(litellm / "run.sh")], log, env, ready)
        try:
            sync = [sys.executable, str(OPENWEBUI_DIR / "sync.py"), "--url", openwebui_service.url]
            options = ["--lgos-url", url, "--lgos-key", key, "--function-id", "lgos_gateway"]
            run_step([*sync, *options, "--poll-interval", "0.25"], timeout=300)
        except BaseException:
            process.stop(grace=20)
            raise
        return process

    process = start_once("LiteLLM", launch)
    if isinstance(process, StartFailure):
        yield process
        return
    try:
        yield Gateway(function="lgos_gateway", url=url, key=key)
    finally:
        process.stop(grace=20)


@pytest.fixture
def gateway(gateway_service: Gateway | StartFailure) -> Gateway:
    return require(gateway_service)


@pytest.fixture
def gateway_without_lgos(lgos_url: str, openwebui_url: str, tmp_path: Path) -> Iterator[Gateway]:
    """A LiteLLM proxy whose LGOS is down (a port nobody listens on), and ``lgos_nolgos``
    Pipes through it: the gateway answers, the piece behind it does not, as when `just demo/api`
    was never started. The catalog comes from the session's LGOS (sync.py --catalog-url)."""
    port = free_port()
    key = "sk-openwebui-no-lgos"
    env = {
        **os.environ,
        "LGOS_API_BASE_URL": f"http://127.0.0.1:{free_port()}/v1",
        "LITELLM_PORT": str(port),
        "LITELLM_MASTER_KEY": key,
    }
    url = f"http://127.0.0.1:{port}/v1"
    litellm = REPO / "demo" / "litellm"
    run_step([str(litellm / "setup.sh")], timeout=1800)
    ready = f"http://127.0.0.1:{port}/health/liveliness"
    process = start(["bash", str(litellm / "run.sh")], tmp_path / "litellm.log", env, ready)
    try:
        sync = [sys.executable, str(OPENWEBUI_DIR / "sync.py"), "--url", openwebui_url]
        options = ["--lgos-url", url, "--lgos-key", key, "--catalog-url", lgos_url]
        fixes = ["--upstream-start", "just demo/litellm", "--lgos-start", "just demo/api"]
        run_step([*sync, *options, *fixes, "--function-id", "lgos_nolgos"], timeout=300)
        yield Gateway(function="lgos_nolgos", url=url, key=key)
    finally:
        process.stop(grace=20)


@pytest.fixture(scope="session")
def idle_service(
    openwebui_service: OpenWebUI | StartFailure, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[IdleStack | StartFailure]:
    """A third set of Pipes, ``lgos_idle_*``, on an LGOS that queues background runs on DBOS,
    with one real worker that a test may stop: a run then stays queued, as when every worker
    is down."""
    if isinstance(openwebui_service, StartFailure):
        yield openwebui_service
        return
    psycopg = pytest.importorskip("psycopg", reason="DBOS needs PostgreSQL (lgos[postgres])")
    admin = os.environ.get("LGOS_TEST_POSTGRES_ADMIN", "postgresql://postgres@127.0.0.1:5432")
    name = f"lgos_owui_idle_{secrets.token_hex(4)}"
    with psycopg.connect(f"{admin}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    logs = tmp_path_factory.mktemp("lgos-idle")
    port = free_port()
    uri = f"{admin}/{name}"
    env = {**os.environ, "LGOS_BACKGROUND": "dbos", "LGOS_POSTGRES_URI": uri}
    url = f"http://127.0.0.1:{port}/v1"

    def launch() -> IdleStack:
        lgos = Path(sys.executable).with_name("lgos")
        command = [str(lgos), "serve", "demo.registry:create_registry", "--host", "127.0.0.1"]
        server = start([*command, "--port", str(port)], logs / "lgos.log", env, f"{url}/models")
        stack = IdleStack(server=server, env=env, log=logs / "worker.log")
        try:
            sync = [sys.executable, str(OPENWEBUI_DIR / "sync.py"), "--url", openwebui_service.url]
            run_step([*sync, "--lgos-url", url, "--function-id", "lgos_idle"], timeout=300)
        except BaseException:
            stack.stop()
            raise
        return stack

    try:
        stack = start_once("lgos serve on DBOS", launch)
        yield stack
        if not isinstance(stack, StartFailure):
            stack.stop()
    finally:
        with psycopg.connect(f"{admin}/postgres", autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.fixture
def idle_stack(idle_service: IdleStack | StartFailure) -> IdleStack:
    return require(idle_service)


@pytest.fixture
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
def chat_with_settings(openwebui_url: str, admin_token: str) -> Any:
    """A new, empty chat with a graph whose settings were saved through Open WebUI's chat API,
    which keeps any value (the settings dialog refuses what the graph does not allow): the
    URL of its page."""

    def create(model: str, **values: Any) -> str:
        chat = {
            "title": "New Chat",
            "models": [model],
            "params": {},
            "history": {"messages": {}, "currentId": None},
            "messages": [],
            "tags": [],
            "timestamp": int(time.time() * 1000),
        }
        body = {"chat": chat, "variables": values}
        created = http_json("POST", f"{openwebui_url}/api/v1/chats/new", body, admin_token)
        return f"{openwebui_url}/c/{created['id']}"

    return create


@pytest.fixture(scope="session")
def owui_browser(playwright: Playwright) -> Iterator[Browser]:
    """Debian's Chromium, launched from pytest-playwright's session-wide `playwright`.

    One Playwright per test session: a second `sync_playwright()` next to another test
    folder's would fail ("using Playwright Sync API inside the asyncio loop").
    """
    browser = launch_chromium(playwright)
    yield browser
    browser.close()


@pytest.fixture
def page(owui_browser: Browser, admin_token: str) -> Iterator[Page]:
    """A fresh browser context per test (this folder's own, in place of pytest-playwright's)."""
    context = loopback_context(owui_browser, viewport={"width": 1280, "height": 800})
    page = context.new_page()
    # What the page itself reported, printed with a failing test's output.
    page.on("pageerror", lambda error: print(f"page error: {error}"))
    page.on(
        "console", lambda m: print(f"console {m.type}: {m.text}") if m.type == "error" else None
    )
    yield page
    context.close()


@pytest.fixture(scope="session")
def timings() -> Iterator[Timings]:
    found = Timings("openwebui")
    yield found
    found.save()
