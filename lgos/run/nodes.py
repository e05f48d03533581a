"""Helpers graph nodes call while LGOS runs them: the request being served, status events."""

from __future__ import annotations

from contextvars import ContextVar

from langgraph.config import get_config, get_stream_writer

from lgos.core.request import GraphRequest

STATUS_EVENT_TYPE = "lgos.status"
# A graph run by hand (not by LGOS's runner) may put the request in its RunnableConfig here.
REQUEST_CONFIG_KEY = "__lgos_request"

# The request of the graph step being driven. The runner sets it around each step it asks the
# graph for; LangGraph runs every node in a copy of that context (async nodes as tasks, sync
# nodes in threads, subgraphs inside their parent's node), so each node sees its own run's
# request. In `configurable` it cost LangChain a merge into every child configuration.
serving: ContextVar[GraphRequest | None] = ContextVar("lgos_request", default=None)


def get_request() -> GraphRequest:
    """The request being served, from inside a graph node (tools, user, settings)."""
    request = serving.get()
    if request is None:
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
