"""Fixtures for the Chainlit browser tests: real processes on free loopback ports.

- `lgos_server` / `lgos_url`: `lgos serve demo.registry:create_registry` with the in-memory
  background engine and, when psycopg is installed, a fresh PostgreSQL database (so a paused
  review outlives a restart). LGOS_CHAINLIT_TEST_BASE_URL (+ LGOS_CHAINLIT_TEST_API_KEY) points
  the tests at a server or gateway that is already running instead, e.g. LiteLLM.
- `chainlit`: the Chainlit app started by its own launcher (`demo/chainlit/run.sh`, which also
  builds its environment) on a fresh PostgreSQL database that is dropped at the end.
- `chromium_browser`: Debian's Chromium driven by Playwright, headless; `new_page` gives a
  context whose requests to anything but loopback are aborted (the page asks for CDN fonts and
  KaTeX css).

Each service starts with its own deadline, outside any test's timeout (the tests time only their
body), and one that does not start fails the first test that needs it, with its log, and skips
the others (tests/support/started.py).
"""

from __future__ import annotations

import os
import secrets
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support.browser import launch_chromium, loopback_context
from tests.support.processes import LGOS, Process, free_port, lgos
from tests.support.started import StartFailure, require, start_once
from tests.support.timings import Timings

try:
    from playwright import sync_api as playwright_api
except ImportError:  # the unit tests of lgos_ui.py run without it
    playwright_api = None
else:
    # Runs wait for real processes (a background run is polled every second): allow 30 s.
    playwright_api.expect.set_options(timeout=30_000)

REPO = Path(__file__).resolve().parents[3]
APP_DIR = REPO / "demo" / "chainlit"
# Screenshots go to the gitignored build folder; `just docs-images` copies them to docs/img.
SHOTS = REPO / "build" / "screenshots" / "chainlit"
PG_ADMIN_URL = os.environ.get("LGOS_TEST_POSTGRES_ADMIN", "postgresql://postgres@127.0.0.1:5432")


@pytest.fixture(scope="session")
def logs_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("chainlit-logs")


def create_database(name: str) -> bool:
    """Create a throwaway database with psycopg (lgos[postgres]); False when psycopg is absent."""
    try:
        import psycopg
    except ImportError:
        return False
    with psycopg.connect(f"{PG_ADMIN_URL}/postgres", autocommit=True) as conn:
        conn.execute(f'CREATE DATABASE "{name}"')
    return True


def drop_database(name: str) -> None:
    import psycopg

    with psycopg.connect(f"{PG_ADMIN_URL}/postgres", autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


class LgosServer:
    """`lgos serve demo.registry:create_registry` as a real process, restartable on its port.

    With PostgreSQL (a fresh database) paused reviews outlive a restart of the server; the
    background engine is the in-memory one, which is enough for one process.
    """

    def __init__(self, log: Path, postgres_uri: str | None, background: str = "memory") -> None:
        self.port = free_port()
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        self.log = log
        self.env = {**os.environ, "LGOS_BACKGROUND": background}
        # The citations of deep-research open the corpus this server serves.
        self.env["DEMO_CORPUS_URL"] = f"http://127.0.0.1:{self.port}/corpus"
        self.env.pop("LGOS_POSTGRES_URI", None)
        if postgres_uri:
            self.env["LGOS_POSTGRES_URI"] = postgres_uri
        self.durable = postgres_uri is not None
        self.proc: Process | None = None

    def start(self) -> None:
        args = ["demo.registry:create_registry", "--host", "127.0.0.1", "--port", str(self.port)]
        self.proc = lgos("serve", *args, env=self.env, log=self.log, own_group=True)
        self.proc.wait_until_serving()

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop(grace=15)
            self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


@pytest.fixture(scope="session")
def lgos_service(logs_dir: Path) -> Iterator[LgosServer | StartFailure | None]:
    """The real LGOS server (None when LGOS_CHAINLIT_TEST_BASE_URL names one already running)."""
    if os.environ.get("LGOS_CHAINLIT_TEST_BASE_URL"):
        yield None
        return
    name = f"lgos_api_chainlit_test_{secrets.token_hex(4)}"
    durable = create_database(name)
    server = LgosServer(logs_dir / "lgos.log", f"{PG_ADMIN_URL}/{name}" if durable else None)
    try:
        started = start_once("lgos serve", server.start)
        yield started if isinstance(started, StartFailure) else server
    finally:
        server.stop()
        if durable:
            drop_database(name)


@pytest.fixture
def lgos_server(lgos_service: LgosServer | StartFailure | None) -> LgosServer | None:
    return require(lgos_service)


class WorkerlessStack:
    """An LGOS on DBOS with one real worker that a test stops: a run then stays queued, as
    when every worker is down."""

    def __init__(self, server: LgosServer, log: Path) -> None:
        self.server = server
        self.log = log
        self.worker: Process | None = None

    def start_worker(self) -> None:
        command = [LGOS, "worker", "demo.registry:create_registry"]
        self.worker = Process(command, env=self.server.env, log=self.log, name="lgos worker")
        worker = self.worker
        worker.wait_for(
            lambda: any("worker.started" in line for line in worker.stdout), 240, "worker.started"
        )

    def stop_worker(self) -> None:
        if self.worker is not None:
            self.worker.stop(grace=30)
            self.worker = None


@pytest.fixture(scope="session")
def workerless_service(
    logs_dir: Path,
) -> Iterator[tuple[ChainlitApp, WorkerlessStack] | StartFailure]:
    """Chainlit on an LGOS that queues background runs on DBOS, with a worker a test stops."""
    api_db = f"lgos_api_noworker_test_{secrets.token_hex(4)}"
    ui_db = f"lgos_chainlit_noworker_test_{secrets.token_hex(4)}"
    if not create_database(api_db):
        pytest.skip("psycopg is not installed: DBOS needs PostgreSQL")
    server = LgosServer(logs_dir / "lgos-noworker.log", f"{PG_ADMIN_URL}/{api_db}", "dbos")
    stack = WorkerlessStack(server, logs_dir / "worker-noworker.log")
    app = ChainlitApp(
        server.base_url, f"{PG_ADMIN_URL}/{ui_db}", logs_dir / "chainlit-noworker.log"
    )

    def launch() -> None:
        server.start()
        app.start()

    try:
        started = start_once("Chainlit on DBOS", launch)
        yield started if isinstance(started, StartFailure) else (app, stack)
    finally:
        stack.stop_worker()
        app.stop()
        server.stop()
        drop_chainlit_database(app.env["DATABASE_URL"])
        drop_database(api_db)


@pytest.fixture
def chainlit_without_worker(
    workerless_service: tuple[ChainlitApp, WorkerlessStack] | StartFailure,
) -> tuple[ChainlitApp, WorkerlessStack]:
    return require(workerless_service)


@pytest.fixture
def lgos_url(lgos_server: LgosServer | None) -> str:
    """OpenAI base URL of the LGOS server the Chainlit app talks to."""
    return lgos_server.base_url if lgos_server else os.environ["LGOS_CHAINLIT_TEST_BASE_URL"]


def drop_chainlit_database(url: str) -> None:
    python = APP_DIR / ".venv" / "bin" / "python"
    if python.exists():
        subprocess.run([str(python), str(APP_DIR / "setup_db.py"), "--drop", url], timeout=120)


class ChainlitApp:
    """The Chainlit app as a real process, restartable on the same port and database."""

    def __init__(self, base_url: str, database_url: str, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log = log
        self.env = {
            **os.environ,
            "PORT": str(self.port),
            "LGOS_BASE_URL": base_url,
            "DATABASE_URL": database_url,
            # Fixed for the session so a login survives a restart of the app.
            "CHAINLIT_AUTH_SECRET": secrets.token_urlsafe(48),
            "LGOS_CHAINLIT_USERS": "demo:demo",
            # How an outage message names the server and its fix (demo/justfile names the
            # gateway and `just demo/litellm`; these tests talk to the API itself).
            "LGOS_UPSTREAM_NAME": "the LGOS API",
            "LGOS_UPSTREAM_START": "just demo/api",
        }
        self.env.pop("OPENAI_BASE_URL", None)
        # A gateway in front of LGOS (LGOS_CHAINLIT_TEST_BASE_URL) may want its key.
        if os.environ.get("LGOS_CHAINLIT_TEST_API_KEY"):
            self.env["LGOS_API_KEY"] = os.environ["LGOS_CHAINLIT_TEST_API_KEY"]
        self.proc: Process | None = None

    def start(self) -> None:
        self.proc = Process(
            [str(APP_DIR / "run.sh")], env=self.env, log=self.log, name="chainlit", own_group=True
        )
        # The first start may build the environment (about a minute on a fresh machine).
        self.proc.wait_http(self.url + "/login", timeout=300, any_status=True)

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.stop(grace=15)
            self.proc = None

    def crash_and_restart(self) -> None:
        """SIGKILL (no clean disconnect, so Chainlit cannot save its session), then start."""
        if self.proc is not None:
            self.proc.kill()
            self.proc = None
        self.start()


@pytest.fixture(scope="session")
def chainlit_service(
    lgos_service: LgosServer | StartFailure | None, logs_dir: Path
) -> Iterator[ChainlitApp | StartFailure]:
    if isinstance(lgos_service, StartFailure):
        yield lgos_service
        return
    base_url = lgos_service.base_url if lgos_service else os.environ["LGOS_CHAINLIT_TEST_BASE_URL"]
    name = f"lgos_chainlit_test_{secrets.token_hex(4)}"
    app = ChainlitApp(base_url, f"{PG_ADMIN_URL}/{name}", logs_dir / "chainlit.log")
    try:
        started = start_once("Chainlit", app.start)  # run.sh creates the database (setup_db.py)
        yield started if isinstance(started, StartFailure) else app
    finally:
        app.stop()
        drop_chainlit_database(app.env["DATABASE_URL"])


@pytest.fixture
def chainlit(chainlit_service: ChainlitApp | StartFailure) -> ChainlitApp:
    return require(chainlit_service)


@pytest.fixture
def replica(chainlit: ChainlitApp, logs_dir: Path) -> Iterator[ChainlitApp]:
    """Another process of the same app on the same database, not started yet: a replica, or a
    restart that overlaps the old process."""
    other = ChainlitApp(
        chainlit.env["LGOS_BASE_URL"], chainlit.env["DATABASE_URL"], logs_dir / "replica.log"
    )
    yield other
    other.stop()


@pytest.fixture(scope="session")
def chromium_browser(playwright: Any) -> Iterator[object]:
    """Our own launch (pytest-playwright's `browser` would look for its downloaded build), on
    pytest-playwright's session-wide Playwright: one sync Playwright per test session."""
    if playwright_api is None:
        pytest.skip("playwright is not installed (uv run --with playwright ...)")
    browser = launch_chromium(playwright)
    yield browser
    browser.close()


@pytest.fixture
def new_page(chromium_browser: object) -> Iterator[Callable[[], object]]:
    contexts = []

    def make(locale: str = "en-US") -> object:
        context = loopback_context(
            chromium_browser, viewport={"width": 1280, "height": 900}, locale=locale
        )
        context.set_default_timeout(30_000)
        contexts.append(context)
        return context.new_page()

    yield make
    for context in contexts:
        context.close()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    """Remember each phase's outcome on the test item, for failure screenshots; a failed test
    shows the end of every service's log (they live in pytest's temporary folders, of which
    only the last few runs are kept)."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    logs = getattr(item, "funcargs", {}).get("logs_dir")
    if report.failed and isinstance(logs, Path):
        for log in sorted(logs.glob("*.log")):
            tail = log.read_text(errors="replace").splitlines()[-LOG_TAIL_LINES:]
            report.sections.append((f"end of {log.name}", "\n".join(tail)))
    return report


LOG_TAIL_LINES = 60


@pytest.fixture(scope="session")
def screenshot_dir() -> Path:
    SHOTS.mkdir(parents=True, exist_ok=True)
    return SHOTS


@pytest.fixture(scope="session")
def timings() -> Iterator[Timings]:
    found = Timings("chainlit")
    yield found
    found.save()
