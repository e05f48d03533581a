"""Fixtures: the demo registry served in-process, and the official SDK in strict mode."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from fastapi import FastAPI
from openai import AsyncOpenAI

from demo.graphs.models import API_KEY_VARIABLE, BASE_URL_VARIABLE, MODEL_VARIABLE
from tests.demo.support import demo_app, sdk_client


@pytest.fixture
async def app(monkeypatch: pytest.MonkeyPatch) -> AsyncIterator[FastAPI]:
    # The demo graphs would switch to a real model if a developer's shell configures one.
    for variable in (MODEL_VARIABLE, API_KEY_VARIABLE, BASE_URL_VARIABLE):
        monkeypatch.delenv(variable, raising=False)
    application = demo_app()
    async with application.router.lifespan_context(application):
        yield application


@pytest.fixture
async def client(app: FastAPI) -> AsyncIterator[AsyncOpenAI]:
    async with sdk_client(app) as sdk:
        yield sdk
