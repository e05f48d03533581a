"""The demo registry served in-process, and the official SDK in strict mode pointed at it."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import anyio
import httpx2
import pytest
from fastapi import FastAPI
from openai import AsyncOpenAI
from openai.types.responses import Response, ResponseFunctionToolCall

from demo.graphs.models import API_KEY_VARIABLE, BASE_URL_VARIABLE, MODEL_VARIABLE
from lgos.server import ServerSettings, create_app

INTERRUPT_TOOL = "lgos_interrupt"
TERMINAL = {"completed", "failed", "cancelled", "incomplete"}
# Far above what any demo run needs; only bounds a hung run.
POLL_DEADLINE_SECONDS = 30


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def demo_app() -> FastAPI:
    return create_app(
        "demo.registry:create_registry",
        settings=ServerSettings(
            POSTGRES_URI=None, BACKGROUND="memory", INTERRUPT_SWEEP_INTERVAL_MINUTES=0
        ),
    )


@asynccontextmanager
async def sdk_client(app: FastAPI) -> AsyncIterator[AsyncOpenAI]:
    """The official SDK, strict, talking to `app` in-process."""
    transport = httpx2.ASGITransport(app=app)
    async with httpx2.AsyncClient(transport=transport, base_url="http://test") as http:
        yield AsyncOpenAI(
            base_url="http://test/v1",
            api_key="x",
            http_client=http,
            _strict_response_validation=True,
            max_retries=0,
        )


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


def settings(**values: Any) -> dict[str, str]:
    """Per-request graph settings travel as a JSON object string in metadata."""
    return {"lgos_settings": json.dumps(values)}


def review_calls(response: Response) -> list[ResponseFunctionToolCall]:
    return [
        item
        for item in response.output
        if item.type == "function_call" and item.name == INTERRUPT_TOOL
    ]


def commentary(response: Response) -> list[str]:
    return [
        part.text
        for item in response.output
        if item.type == "message" and item.phase == "commentary"
        for part in item.content
        if part.type == "output_text"
    ]


async def poll(client: AsyncOpenAI, response: Response) -> Response:
    """Retrieve a background Response until it is terminal, as a client would."""
    with anyio.fail_after(POLL_DEADLINE_SECONDS):
        while response.status not in TERMINAL:
            # Yield to the in-process engine between polls; the deadline bounds the wait.
            await anyio.sleep(0.01)
            response = await client.responses.retrieve(response.id)
    return response
