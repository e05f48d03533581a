"""Server-sent event framing. Frames are bytes built directly: no SDK models per event."""

from __future__ import annotations

from typing import Any

from pydantic_core import to_json

PING = b": ping\n\n"
DONE = b"data: [DONE]\n\n"


def named_event(event: dict[str, Any]) -> bytes:
    """`event: <type>` + `data: <json>`; the Responses API names every event by its `type`."""
    return b"event: " + str(event["type"]).encode() + b"\ndata: " + to_json(event) + b"\n\n"


def data_event(payload: dict[str, Any]) -> bytes:
    """A bare `data:` frame, as Chat Completions streams use."""
    return b"data: " + to_json(payload) + b"\n\n"
