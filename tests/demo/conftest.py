"""The demo registry served in-process (the shared `client` of tests/conftest.py talks to it),
and a live process whose pid stands in for a piece of the demo stack."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import AsyncIterator, Iterator

import pytest
from fastapi import FastAPI

from demo.graphs.models import API_KEY_VARIABLE, BASE_URL_VARIABLE, MODEL_VARIABLE
from tests.demo.support import demo_app


@pytest.fixture
async def app(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FastAPI]:
    # The demo graphs would switch to a real model if a developer's shell configures one.
    for variable in (MODEL_VARIABLE, API_KEY_VARIABLE, BASE_URL_VARIABLE):
        monkeypatch.delenv(variable, raising=False)
    application = demo_app()
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
def alive() -> Iterator[int]:
    """The pid of a live process (it waits on its stdin until the test ends)."""
    process = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=-1)
    try:
        yield process.pid
    finally:
        assert process.stdin is not None
        process.stdin.close()
        process.wait(timeout=30)
