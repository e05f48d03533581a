"""Helpers graph nodes call while LGOS runs them: the request being served, status events."""

from __future__ import annotations

from langgraph.config import get_config, get_stream_writer

from lgos.core.request import GraphRequest
from lgos.run.usage import collecting

STATUS_EVENT_TYPE = "lgos.status"
# A graph run by hand (not by LGOS's runner) may put the request in its RunnableConfig here.
REQUEST_CONFIG_KEY = "__lgos_request"


def get_request() -> GraphRequest:
    """The request being served, from inside a graph node (tools, user, settings)."""
    # The runner sets its run's usage collector, which carries the request, around each step
    # it asks the graph for; LangGraph runs every node in a copy of that context (async nodes
    # as tasks, sync nodes in threads, subgraphs inside their parent's node), so each node sees
    # its own run's request. In `configurable` it cost LangChain a merge into every child
    # configuration; in a context variable of its own, a set and a reset more per step.
    collector = collecting.get()
    request = None if collector is None else collector.request
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
