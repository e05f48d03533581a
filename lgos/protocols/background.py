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

from lgos.core.errors import SERVER_ERROR_MESSAGE
from lgos.core.registry import GraphConfig, GraphFeature
from lgos.core.request import GraphRequest
from lgos.service.background import BackgroundResponses
from lgos.wire import responses_decoder
from lgos.wire.interrupts import INTERRUPT_FUNCTION
from lgos.wire.responses_decoder import DecodedResponsesRequest

SETTINGS_KEY = "lgos_settings"


def can_run_in_background(config: GraphConfig, background: BackgroundResponses | None) -> bool:
    """A graph that may run in the background, on a server with an engine."""
    return (
        background is not None
        and background.backend is not None
        and config.supports(GraphFeature.BACKGROUND)
    )


def can_run_as_task(config: GraphConfig, background: BackgroundResponses | None) -> bool:
    """A background graph that never pauses for review (MCP tasks do not answer pauses yet)."""
    return can_run_in_background(config, background) and not config.supports(
        GraphFeature.INTERRUPTS
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


def answer_request(
    model: str,
    paused_id: str,
    answers: Mapping[str, str],
    metadata: Mapping[str, str],
    *,
    stream: bool,
) -> DecodedResponsesRequest:
    """The background Responses request that answers the pause of Response `paused_id`
    (review id → answer), as an OpenAI client would: `previous_response_id` and one
    `function_call_output` per question. The worker checks the answers against the pause."""
    body: dict[str, JsonValue] = {
        "model": model,
        "previous_response_id": paused_id,
        "input": [
            {"type": "function_call_output", "call_id": call_id, "output": output}
            for call_id, output in answers.items()
        ],
        "background": True,
        "metadata": dict(metadata),
    }
    if stream:
        body["stream"] = True
    return responses_decoder.decode(body)


def interrupt_calls(response: Mapping[str, Any]) -> list[tuple[str, str]]:
    """A paused Response's questions: (call id, arguments JSON) of each `lgos_interrupt` call."""
    return [
        (str(item["call_id"]), str(item.get("arguments") or "null"))
        for item in response.get("output") or ()
        if item.get("type") == "function_call" and item.get("name") == INTERRUPT_FUNCTION
    ]


def refused(response: Mapping[str, Any]) -> bool:
    """A failed Response whose request was refused (an answer the graph or the question did
    not take, say: the worker fails it with the refusal's own message), not a run that broke
    (the generic server error)."""
    message = failure_message(response)
    return response.get("status") == "failed" and message not in (None, SERVER_ERROR_MESSAGE)


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
