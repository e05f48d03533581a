"""Fixtures: the official SDK talking to the in-memory application (see support.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from openai import AsyncOpenAI

from tests.support import make_app, running


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
async def client() -> AsyncIterator[AsyncOpenAI]:
    async with running(make_app()) as sdk:
        yield sdk
