"""Shared fixtures: the test registry served in-process, and the official SDK in strict mode."""

from __future__ import annotations

from collections.abc import AsyncIterator, Generator, Iterator

import httpx2
import pytest
from fastapi import FastAPI
from openai import AsyncOpenAI

from lgos import InMemoryBackgroundBackend, LanggraphOpenaiServe
from tests.support import hatchet, started
from tests.support.graphs import Probe, build_registry
from tests.support.sdk import asgi_http, strict_sdk


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(
    item: pytest.Item, call: pytest.CallInfo[None]
) -> Generator[None, pytest.TestReport, pytest.TestReport]:
    """A service fixture that failed to start errors once, in the first test that needed it;
    the later tests that need it are skipped with a pointer there (tests/support/started.py)."""
    report = yield
    started.report_once(item, call, report)
    return report


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Browser tests run last. pytest-playwright's sync Playwright lives for the rest of the
    session once a test asks for it, and it keeps an event loop running in the main thread, so
    every async test after it would fail to start its own loop."""
    items.sort(key=lambda item: "playwright" in getattr(item, "fixturenames", ()))


@pytest.fixture(scope="session")
def hatchet_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, str]]:
    """Client settings of a real Hatchet engine (started once per session unless one is
    configured), shared by every test package that runs on Hatchet."""
    reason = hatchet.unavailable_reason()
    if reason:
        pytest.skip(reason)
    with hatchet.running_engine(tmp_path_factory.mktemp("hatchet")) as settings:
        yield settings


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def probe() -> Probe:
    return Probe()


@pytest.fixture
async def app(probe: Probe) -> AsyncIterator[FastAPI]:
    registry = build_registry(probe)
    background = InMemoryBackgroundBackend(registry)
    application = FastAPI()
    LanggraphOpenaiServe(registry, application, background=background).bind_openai_api()
    async with background.lifespan():
        yield application


@pytest.fixture
async def http(app: FastAPI) -> AsyncIterator[httpx2.AsyncClient]:
    """Raw HTTP to `app` in this process (the `app` fixture nearest the test)."""
    async with asgi_http(app) as client:
        yield client


@pytest.fixture
def client(http: httpx2.AsyncClient) -> AsyncOpenAI:
    """The official SDK in strict mode over `app`: the one meaning of `client` in the tests. A
    folder or module that serves another app overrides `app`, never `client`."""
    return strict_sdk(http)
