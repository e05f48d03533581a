"""Server-sent event framing, the only place LGOS turns events into SSE bytes. Frames are
bytes built directly from the event dicts: no SDK models per event."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic_core import to_json

PING = b": ping\n\n"
DONE = b"data: [DONE]\n\n"


# Mapping[str, Any]: the framers take any of the wire's TypedDicts (a TypedDict is a Mapping).
def named_event(event: Mapping[str, Any]) -> bytes:
    """`event: <type>` + `data: <json>`; the Responses API names every event by its `type`."""
    return b"event: " + str(event["type"]).encode() + b"\ndata: " + to_json(event) + b"\n\n"


def data_event(payload: Mapping[str, Any]) -> bytes:
    """A bare `data:` frame, as Chat Completions streams use."""
    return b"data: " + to_json(payload) + b"\n\n"
