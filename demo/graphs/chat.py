"""Plain chat graphs: one answer, several nodes, progress, a long stream."""

from __future__ import annotations

import asyncio
from typing import Literal

from langchain_core.messages import AIMessage, BaseMessage, SystemMessage
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.pregel import Pregel
from pydantic import Field

from demo.graphs.fake_model import ScriptedChatModel, last_user_text
from demo.graphs.models import chat_model
from lgos import ClientSettings, get_request, status_event


class SimpleSettings(ClientSettings):
    audience: Literal["general", "expert", "child"] = "general"
    enthusiastic: bool = False


_TONE = {
    "general": "Here is a short answer",
    "expert": "In precise terms",
    "child": "Imagine it like this",
}


def _simple_answer(messages: list[BaseMessage]) -> str:
    settings = get_request().settings
    assert isinstance(settings, SimpleSettings)
    question = last_user_text(messages) or "nothing"
    ending = "!" if settings.enthusiastic else "."
    return f"{_TONE[settings.audience]}: you said '{question}'{ending}"


def _simple_instructions() -> SystemMessage:
    settings = get_request().settings
    assert isinstance(settings, SimpleSettings)
    style = " Be enthusiastic." if settings.enthusiastic else ""
    return SystemMessage(f"Answer briefly, for a {settings.audience} audience.{style}")


def simple_graph() -> Pregel:
    # The scripted fake by default; a real model when DEMO_OPENAI_* configure one.
    model = chat_model(ScriptedChatModel(script=_simple_answer))

    async def answer(state: MessagesState) -> dict[str, list[BaseMessage]]:
        messages = [_simple_instructions(), *state["messages"]]
        return {"messages": [await model.ainvoke(messages)]}

    builder = StateGraph(MessagesState)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    builder.add_edge("answer", END)
    return builder.compile()


class PartsState(MessagesState):
    parts: list[str]


def multi_node_streaming_graph() -> Pregel:
    """Three nodes stream in order; the last one returns the joined answer."""

    def node(label: str):
        model = ScriptedChatModel(script=lambda _messages: f"{label} part. ")

        async def run(state: PartsState) -> dict[str, list[str]]:
            chunk = await model.ainvoke(state["messages"], config={"tags": []})
            return {"parts": [*state.get("parts", []), chunk.text]}

        return run

    async def finish(state: PartsState) -> dict[str, list[BaseMessage]]:
        return {"messages": [AIMessage(content="".join(state["parts"]))]}

    builder = StateGraph(PartsState)
    for label in ("First", "Second", "Third"):
        builder.add_node(label.lower(), node(label))
    builder.add_node("finish", finish)
    builder.add_edge(START, "first")
    builder.add_edge("first", "second")
    builder.add_edge("second", "third")
    builder.add_edge("third", "finish")
    builder.add_edge("finish", END)
    return builder.compile()


def status_events_graph() -> Pregel:
    model = ScriptedChatModel(script=lambda m: f"Done looking into '{last_user_text(m)}'.")

    async def work(state: MessagesState) -> dict[str, list[BaseMessage]]:
        status_event("Reading the question")
        await asyncio.sleep(0)
        status_event("Looking things up")
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("work", work)
    builder.add_edge(START, "work")
    builder.add_edge("work", END)
    return builder.compile()


class LongStreamSettings(ClientSettings):
    # Bounded: one request must not be able to keep a core busy for minutes or fill memory.
    words: int = Field(default=200, ge=1, le=5000, description="How many words to stream.")
    delay_ms: int = Field(default=50, ge=0, le=1000, description="Pause between words (ms).")


def streaming_long_graph() -> Pregel:
    def script(_messages: list[BaseMessage]) -> str:
        settings = get_request().settings
        assert isinstance(settings, LongStreamSettings)
        return " ".join(f"word{index}" for index in range(settings.words))

    async def stream(state: MessagesState) -> dict[str, list[BaseMessage]]:
        settings = get_request().settings
        assert isinstance(settings, LongStreamSettings)
        model = ScriptedChatModel(script=script, delay=settings.delay_ms / 1000)
        return {"messages": [await model.ainvoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("stream", stream)
    builder.add_edge(START, "stream")
    builder.add_edge("stream", END)
    return builder.compile()
