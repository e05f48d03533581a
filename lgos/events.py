"""Helpers graph nodes call to talk to the client while they run."""

from __future__ import annotations

from langgraph.config import get_stream_writer

STATUS_EVENT_TYPE = "lgos.status"


def status_event(description: str) -> None:
    """Tell the client what the graph is doing now.

    In a Responses stream it becomes a complete assistant message with `phase: "commentary"`,
    apart from the answer. Non-streaming requests and Chat Completions leave it out.
    """
    if description.strip():
        get_stream_writer()({"type": STATUS_EVENT_TYPE, "description": description})
