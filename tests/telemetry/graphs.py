"""Graphs for the telemetry tests: each one ends a run a different way."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.graph import MessagesState
from opentelemetry.trace import TracerProvider

from demo.graphs.fake_model import ScriptedChatModel
from lgos import GraphConfig, GraphFeature, GraphRegistry, ServerResources
from tests.support.graphs import single_node

ANSWER = "All good."


class WorkflowBoomError(Exception):
    """What the failing graph raises."""


@dataclass
class Steering:
    """Lets a test observe a running graph without sleeping."""

    tracer_provider: TracerProvider | None = None
    started: asyncio.Event = field(default_factory=asyncio.Event)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)


def registry_factory(steering: Steering) -> Any:
    async def answer(state: MessagesState) -> dict[str, Any]:
        # A span a node (or an instrumented client it calls) creates: it must join the run's trace.
        assert steering.tracer_provider is not None
        with steering.tracer_provider.get_tracer("tests.node").start_as_current_span("node work"):
            model = ScriptedChatModel(script=lambda _messages: ANSWER)
            return {"messages": [await model.ainvoke(state["messages"])]}

    async def broken(state: MessagesState) -> dict[str, Any]:
        raise WorkflowBoomError("the tool is down")

    async def waiting(state: MessagesState) -> dict[str, Any]:
        model = ScriptedChatModel(script=lambda _messages: "Working on it")
        await model.ainvoke(state["messages"])
        steering.started.set()
        try:
            await asyncio.Event().wait()  # until the run is cancelled
        except asyncio.CancelledError:
            steering.cancelled.set()
            raise
        return {"messages": [AIMessage(content="never")]}

    def create_registry(resources: ServerResources) -> GraphRegistry:
        return GraphRegistry(
            graphs={
                "answer": GraphConfig(graph=single_node(answer), description="Answers."),
                "broken": GraphConfig(graph=single_node(broken), description="Raises."),
                "waiting": GraphConfig(
                    graph=single_node(waiting),
                    description="Streams a word, then waits to be cancelled.",
                    features=frozenset({GraphFeature.BACKGROUND}),
                ),
            },
            run_coordinator=resources.run_coordinator,
        )

    return create_registry
