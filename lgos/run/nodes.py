"""Helpers graph nodes call while LGOS runs them: the request being served, status events."""

from __future__ import annotations

from langgraph.config import get_config, get_stream_writer

from lgos.core.request import GraphRequest

STATUS_EVENT_TYPE = "lgos.status"
# Where the runner puts the request in a run's RunnableConfig.
REQUEST_CONFIG_KEY = "__lgos_request"


def get_request() -> GraphRequest:
    """The request being served, from inside a graph node (tools, user, settings)."""
    request = get_config().get("configurable", {}).get(REQUEST_CONFIG_KEY)
    if not isinstance(request, GraphRequest):
        raise RuntimeError("get_request() is only available while LGOS runs a graph")
    return request


def status_event(description: str) -> None:
    """Tell the client what the graph is doing now.

    In a Responses stream it becomes a complete assistant message with `phase: "commentary"`,
    apart from the answer. Non-streaming requests and Chat Completions leave it out.
    """
    if description.strip():
        get_stream_writer()({"type": STATUS_EVENT_TYPE, "description": description})
