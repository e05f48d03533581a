"""The official SDK as the tests use it: strict (every answer validated against the SDK's own
types) and without retries (so every status the server sends is seen), over an app in this
process. (`lgos serve` processes: the `sdk()` methods of tests/stateful/servers.py and
tests/background/conftest.py.)"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import httpx2
from openai import AsyncOpenAI
from starlette.types import ASGIApp

IN_PROCESS_URL = "http://test"


@asynccontextmanager
async def asgi_http(app: ASGIApp) -> AsyncIterator[httpx2.AsyncClient]:
    """An HTTP client whose requests `app` answers in this process."""
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url=IN_PROCESS_URL) as http:
        yield http


def strict_sdk(http: httpx2.AsyncClient, api_key: str = "test") -> AsyncOpenAI:
    """The SDK, strict and without retries, sending through `http` (see `asgi_http`)."""
    return AsyncOpenAI(
        base_url=f"{IN_PROCESS_URL}/v1",
        api_key=api_key,
        http_client=http,
        _strict_response_validation=True,
        max_retries=0,
    )


@asynccontextmanager
async def in_process_sdk(app: ASGIApp) -> AsyncIterator[AsyncOpenAI]:
    """The strict SDK talking to `app` in this process."""
    async with asgi_http(app) as http:
        yield strict_sdk(http)
