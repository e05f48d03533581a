"""The usage collector's way into a run still holds: LangChain reads a configure hook only
through its `get()` (lgos/run/langchain_internals.py), and LangGraph configures the graph's own
callback manager before any other of the run (lgos/run/usage.py, `_collector_for_this_manager`).
An upgrade that changes either fails here: the collector would miss the model calls (no usage)
or sit on the graph's manager again (its cost back)."""

from __future__ import annotations

from typing import Any

import pytest
from langchain_core.callbacks import AsyncCallbackManager, CallbackManager
from langgraph.graph import END, START, MessagesState, StateGraph

from demo.graphs.fake_model import ScriptedChatModel
from lgos.run.usage import UsageCollector, collecting

pytestmark = pytest.mark.anyio


def _graph() -> Any:
    async def answer(state: MessagesState) -> dict[str, Any]:
        model = ScriptedChatModel(script=lambda _m: "two words")
        return {"messages": [await model.ainvoke(state["messages"])]}

    def check(state: MessagesState) -> dict[str, Any]:  # a sync node: LangGraph's thread
        ScriptedChatModel(script=lambda _m: "three more words").invoke(state["messages"][:1])
        return {}

    graph = StateGraph(MessagesState)
    graph.add_node("answer", answer)
    graph.add_node("check", check)
    graph.add_edge(START, "answer")
    graph.add_edge("answer", "check")
    graph.add_edge("check", END)
    return graph.compile()


async def test_the_collector_skips_the_graphs_own_manager_and_joins_every_model_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # Which managers start the graph's chain run and which start a model run, as they start.
    graph_managers: list[Any] = []
    model_managers: list[Any] = []
    chain_start = AsyncCallbackManager.on_chain_start
    async_model_start = AsyncCallbackManager.on_chat_model_start
    sync_model_start = CallbackManager.on_chat_model_start

    async def on_chain_start(self: Any, serialized: Any, inputs: Any, **kwargs: Any) -> Any:
        if kwargs.get("name") == "probed graph":
            graph_managers.append(self)
        return await chain_start(self, serialized, inputs, **kwargs)

    async def on_async_model_start(self: Any, *args: Any, **kwargs: Any) -> Any:
        model_managers.append(self)
        return await async_model_start(self, *args, **kwargs)

    def on_sync_model_start(self: Any, *args: Any, **kwargs: Any) -> Any:
        model_managers.append(self)
        return sync_model_start(self, *args, **kwargs)

    monkeypatch.setattr(AsyncCallbackManager, "on_chain_start", on_chain_start)
    monkeypatch.setattr(AsyncCallbackManager, "on_chat_model_start", on_async_model_start)
    monkeypatch.setattr(CallbackManager, "on_chat_model_start", on_sync_model_start)

    collector = UsageCollector()
    token = collecting.set(collector)
    try:
        await _graph().ainvoke({"messages": [("user", "count")]}, {"run_name": "probed graph"})
    finally:
        collecting.reset(token)

    assert len(graph_managers) == 1
    assert collector not in graph_managers[0].handlers
    assert len(model_managers) == 2
    assert all(collector in manager.handlers for manager in model_managers)
    # Each call is 1 word in; out 2 and 3 words.
    assert collector.calls == 2
    usage = collector.usage()
    assert (usage.input_tokens, usage.output_tokens) == (2, 5)
