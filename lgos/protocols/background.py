"""An agent protocol's long task as a background Response of the engine: what A2A's background
tasks and MCP's tasks share.

The task is submitted as `POST /v1/responses` with `background` would be (through
`BackgroundResponses`, so the same checks, owner scope and engine apply), its id is the
Response id (any API process answers for it, after a restart too), and its answer is read
back from the Response.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import JsonValue

from lgos.core.registry import GraphConfig, GraphFeature
from lgos.core.request import GraphRequest
from lgos.service.background import BackgroundResponses
from lgos.wire import responses_decoder
from lgos.wire.responses_decoder import DecodedResponsesRequest

SETTINGS_KEY = "lgos_settings"


def can_run_as_task(config: GraphConfig, background: BackgroundResponses | None) -> bool:
    """A graph that may run in the background, on a server with an engine. Not one that pauses
    for review: its answer would need a second Response under the same task."""
    return (
        background is not None
        and background.backend is not None
        and config.supports(GraphFeature.BACKGROUND)
        and not config.supports(GraphFeature.INTERRUPTS)
    )


def background_request(
    model: str, request: GraphRequest, metadata: Mapping[str, str], *, stream: bool
) -> DecodedResponsesRequest:
    """The background Responses request that runs `request` (an LgosError when it is refused)."""
    kept: dict[str, JsonValue] = dict(metadata)
    if request.settings is not None:
        kept[SETTINGS_KEY] = request.settings.model_dump_json()
    body: dict[str, JsonValue] = {
        "model": model,
        "input": request.messages[0].text if request.messages else "",
        "background": True,
        "metadata": kept,
    }
    if stream:
        body["stream"] = True
    answer = request.response_format
    if answer is not None and answer.schema is not None:
        body["text"] = {
            "format": {
                "type": "json_schema",
                "name": answer.name or "answer",
                "schema": dict(answer.schema),
                "strict": answer.strict,
            }
        }
    return responses_decoder.decode(body)


def answer_text(response: Mapping[str, Any]) -> str:
    """The Response's answer: its final-answer message text (commentary left out)."""
    return "".join(
        str(part.get("text") or "")
        for item in response.get("output") or ()
        if item.get("type") == "message" and item.get("phase") != "commentary"
        for part in item.get("content") or ()
        if part.get("type") == "output_text"
    )


def failure_message(response: Mapping[str, Any]) -> str | None:
    error = response.get("error")
    if isinstance(error, Mapping) and error.get("message"):
        return str(error["message"])
    return None
