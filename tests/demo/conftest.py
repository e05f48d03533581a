"""The demo registry served in-process: the shared `client` (tests/conftest.py) talks to it."""

from __future__ import annotations

from collections.abc import AsyncIterator

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
