"""Helpers for the demo tests: the demo app in-process, polling, review calls."""

from __future__ import annotations

import json
from typing import Any

import anyio
from fastapi import FastAPI
from openai import AsyncOpenAI
from openai.types.responses import Response, ResponseFunctionToolCall

from lgos import ServerSettings, create_app

INTERRUPT_TOOL = "lgos_interrupt"
TERMINAL = {"completed", "failed", "cancelled", "incomplete"}
# Far above what any demo run needs; only bounds a hung run.
POLL_DEADLINE_SECONDS = 30


def demo_app(postgres_uri: str | None = None) -> FastAPI:
    """The demo registry on in-memory state, or on PostgreSQL when a URI is given."""
    return create_app(
        "demo.registry:create_registry",
        settings=ServerSettings(
            POSTGRES_URI=postgres_uri, BACKGROUND="memory", INTERRUPT_SWEEP_INTERVAL_MINUTES=0
        ),
    )


def settings(**values: Any) -> dict[str, str]:
    """Per-request graph settings travel as a JSON object string in metadata."""
    return {"lgos_settings": json.dumps(values)}


def review_calls(response: Response) -> list[ResponseFunctionToolCall]:
    return [
        item
        for item in response.output
        if item.type == "function_call" and item.name == INTERRUPT_TOOL
    ]


async def poll(client: AsyncOpenAI, response: Response) -> Response:
    """Retrieve a background Response until it is terminal, as a client would."""
    with anyio.fail_after(POLL_DEADLINE_SECONDS):
        while response.status not in TERMINAL:
            # Yield to the in-process engine between polls; the deadline bounds the wait.
            await anyio.sleep(0.01)
            response = await client.responses.retrieve(response.id)
    return response
