"""The application `lgos serve` runs, built in-process with explicit settings, and helpers.

Explicit settings keep a developer's `LGOS_*` and model variables out of the tests; the
in-memory checkpointer and background engine mean nothing has to run besides pytest.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from functools import partial

import httpx2
from fastapi import FastAPI
from lgos import ServerSettings, create_app
from openai import AsyncOpenAI
from openai.types.responses import Response, ResponseFunctionToolCall

from {{ cookiecutter.project_slug }}.models import ModelSettings
from {{ cookiecutter.project_slug }}.registry import build_registry

FAKE_MODEL = ModelSettings(model=None, api_key=None, base_url=None)
IN_MEMORY = ServerSettings(POSTGRES_URI=None, BACKGROUND="memory", ENABLE_LANGFUSE=False)
# Every await on the service is bounded: a hang fails the test instead of stalling the run.
TIMEOUT = 30.0


def make_app(settings: ServerSettings = IN_MEMORY) -> FastAPI:
    return create_app(partial(build_registry, model_settings=FAKE_MODEL), settings=settings)


@asynccontextmanager
async def running(app: FastAPI) -> AsyncIterator[AsyncOpenAI]:
    """Start the app's lifespan and yield the official SDK, strict, talking to it in-process."""
    async with app.router.lifespan_context(app):
        transport = httpx2.ASGITransport(app=app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://service") as http:
            yield AsyncOpenAI(
                base_url="http://service/v1",
                api_key="unused",
                http_client=http,
                # Fail on any field the SDK's models do not expect.
                _strict_response_validation=True,
                max_retries=0,
                timeout=TIMEOUT,
            )


def questions(response: Response) -> list[ResponseFunctionToolCall]:
    """The pending human-review questions of a paused Response."""
    return [
        item
        for item in response.output
        if item.type == "function_call" and item.name == "lgos_interrupt"
    ]


async def until_finished(client: AsyncOpenAI, response: Response) -> Response:
    """Poll a background Response until it leaves queued/in_progress, within TIMEOUT."""
    deadline = time.monotonic() + TIMEOUT
    while response.status in ("queued", "in_progress"):
        assert time.monotonic() < deadline, f"{response.id} still {response.status}"
        await asyncio.sleep(0.05)
        response = await client.responses.retrieve(response.id)
    return response
