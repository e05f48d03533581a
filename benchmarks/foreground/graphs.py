"""The three graphs every target serves, and the registry factories that serve them.

This module imports only LangGraph and LangChain at the top, so the bare app, `lgos serve`
and the reference product's own environment can all import it.
"""

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage, HumanMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph

STREAM_CHUNKS = 1000
SLEEP_SECONDS = 0.05
_WORDS = ("lorem", "ipsum", "dolor", "sit", "amet", "consectetur", "adipiscing", "elit")


def _tokens(count: int) -> list[str]:
    return [f"{_WORDS[i % len(_WORDS)]} " for i in range(count)]


class FakeStreamingModel(BaseChatModel):
    """A deterministic chat model that streams `chunks` small tokens through the callbacks."""

    chunks: int = STREAM_CHUNKS

    @property
    def _llm_type(self) -> str:
        return "lgos-benchmark-fake"

    def _result(self) -> ChatResult:
        message = AIMessage(content="".join(_tokens(self.chunks)))
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _generate(self, messages: list[BaseMessage], *args: Any, **kwargs: Any) -> ChatResult:
        return self._result()

    async def _agenerate(
        self, messages: list[BaseMessage], *args: Any, **kwargs: Any
    ) -> ChatResult:
        return self._result()

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: Any = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for token in _tokens(self.chunks):
            # A real model waits on its socket between chunks; give the event loop the same turn,
            # so each chunk can reach the client before the next one is made.
            await asyncio.sleep(0)
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=token))
            if run_manager is not None:
                await run_manager.on_llm_new_token(token, chunk=chunk)
            yield chunk


def last_user_text(messages: list[BaseMessage]) -> str:
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message.text
    return ""


async def _echo(state: MessagesState) -> dict[str, list[BaseMessage]]:
    return {"messages": [AIMessage(content=last_user_text(state["messages"]))]}


_model = FakeStreamingModel()


async def _stream_long(state: MessagesState) -> dict[str, list[BaseMessage]]:
    return {"messages": [await _model.ainvoke(state["messages"])]}


async def _sleep(state: MessagesState) -> dict[str, list[BaseMessage]]:
    await asyncio.sleep(SLEEP_SECONDS)
    return {"messages": [AIMessage(content="slept")]}


def _single_node(name: str, node: Any) -> CompiledStateGraph:
    builder = StateGraph(MessagesState)
    builder.add_node(name, node)
    builder.add_edge(START, name)
    builder.add_edge(name, END)
    return builder.compile(name=name)


GRAPHS: dict[str, CompiledStateGraph] = {
    "echo": _single_node("echo", _echo),
    "stream-long": _single_node("stream_long", _stream_long),
    "sleep": _single_node("sleep", _sleep),
}
DESCRIPTIONS = {
    "echo": "Echo the last user message.",
    "stream-long": f"Stream {STREAM_CHUNKS} small chunks from a fake chat model.",
    "sleep": f"Wait {int(SLEEP_SECONDS * 1000)} ms, then answer.",
}


def _registry(graph_config: Any, graph_registry: Any) -> Any:
    return graph_registry(
        graphs={
            name: graph_config(graph=graph, description=DESCRIPTIONS[name])
            for name, graph in GRAPHS.items()
        }
    )


def create_registry(resources: Any) -> Any:
    """Registry factory for `lgos serve benchmarks.foreground.graphs:create_registry`."""
    from lgos import GraphConfig, GraphRegistry

    return _registry(GraphConfig, GraphRegistry)


def create_reference_registry(resources: Any) -> Any:
    """The same graphs for the reference product's `lgos serve`, run in its own environment."""
    from langgraph_openai_serve import GraphConfig, GraphRegistry

    return _registry(GraphConfig, GraphRegistry)
