"""Graphs for the stateful tests, served by `lgos serve tests.stateful.registry:create_registry`.

- `history`: no memory of its own; answers with the conversation it was sent.
- `counter`: keeps its thread (GraphFeature.THREADS); its own state counts the turns, so an
  answer `turn 3` proves the thread was reused, and `saw` shows only the new input arrived.
- `approval`: pauses for review, then answers with what it was sent.
- `everything-agent`: the demo's agent (client tools, JSON schema answers, reasoning), for the
  Agents SDK's agents with tools and an `output_type`.
"""

from __future__ import annotations

from typing import Any

from langchain_core.messages import AIMessage
from langgraph.graph import MessagesState
from langgraph.types import interrupt

from demo.graphs.everything import everything_agent_graph
from demo.registry import EVERYTHING
from lgos import GraphConfig, GraphFeature, GraphRegistry, ServerResources
from tests.support.graphs import describe, single_node


class CounterState(MessagesState):
    turns: int
    seen: int


def history_graph() -> Any:
    async def node(state: MessagesState) -> dict[str, Any]:
        return {"messages": [AIMessage(content="saw " + describe(state["messages"]))]}

    return single_node(node)


def counter_graph(checkpointer: Any) -> Any:
    async def node(state: CounterState) -> dict[str, Any]:
        turns = state.get("turns", 0) + 1
        new = state["messages"][state.get("seen", 0) :]
        answer = AIMessage(content=f"turn {turns} saw {describe(new)}")
        return {"turns": turns, "seen": len(state["messages"]) + 1, "messages": [answer]}

    return single_node(node, CounterState, checkpointer=checkpointer)


def approval_graph(checkpointer: Any) -> Any:
    async def ask(state: MessagesState) -> dict[str, Any]:
        decision = interrupt({"question": "Approve?"})
        return {"messages": [AIMessage(content=f"decided {decision}")]}

    return single_node(ask, checkpointer=checkpointer)


def create_registry(resources: ServerResources) -> GraphRegistry:
    background = GraphFeature.BACKGROUND
    return GraphRegistry(
        graphs={
            "history": GraphConfig(
                graph=history_graph(), description="Answers with its history", features={background}
            ),
            "counter": GraphConfig(
                graph=counter_graph(resources.checkpointer),
                description="Counts turns on its thread",
                features={GraphFeature.THREADS, background},
            ),
            "approval": GraphConfig(
                graph=approval_graph(resources.checkpointer),
                description="Asks before answering",
                features={GraphFeature.INTERRUPTS, background},
            ),
            "everything-agent": GraphConfig(
                graph=everything_agent_graph(),
                description="Takes everything a client sends",
                features=EVERYTHING,
            ),
        },
        run_coordinator=resources.run_coordinator,
    )
