"""`get_request()` gives every node its own run's request, wherever LangGraph runs the node:
an async node, a sync node (in a thread), a sync tool inside the node's `ToolNode`, a
subgraph's node, a background run, a run resumed after a pause, and many runs at once."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from fastapi import FastAPI
from langchain_core.messages import AIMessage
from langchain_core.tools import tool
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode
from langgraph.pregel import Pregel
from langgraph.types import interrupt
from openai import AsyncOpenAI

from lgos import (
    GraphConfig,
    GraphFeature,
    GraphRegistry,
    InMemoryBackgroundBackend,
    InMemoryRunCoordinator,
    LanggraphOpenaiServe,
    get_request,
)
from tests.support.graphs import single_node

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(60)]


def _user() -> str:
    return get_request().user or "nobody"


def _sync_graph() -> Pregel:
    def node(state: MessagesState) -> dict[str, Any]:  # LangGraph runs it in a thread
        return {"messages": [AIMessage(content=f"sync {_user()}")]}

    return single_node(node)


@tool
def whoami() -> str:
    """The user the request names."""
    return _user()


def _tool_graph() -> Pregel:
    def call(state: MessagesState) -> dict[str, Any]:
        if state["messages"][-1].type == "tool":
            return {"messages": [AIMessage(content=f"tools {state['messages'][-1].text}")]}
        request_call = {"id": "call_1", "name": "whoami", "args": {}}
        return {"messages": [AIMessage(content="", tool_calls=[request_call])]}

    builder = StateGraph(MessagesState)
    builder.add_node("call", call)
    builder.add_node("tools", ToolNode([whoami]))
    builder.add_edge(START, "call")
    builder.add_conditional_edges(
        "call", lambda state: "tools" if state["messages"][-1].tool_calls else END
    )
    builder.add_edge("tools", "call")
    return builder.compile()


def _nested_graph() -> Pregel:
    async def inner(state: MessagesState) -> dict[str, Any]:
        await asyncio.sleep(0)  # other runs interleave here
        return {"messages": [AIMessage(content=f"nested {_user()}")]}

    return single_node(single_node(inner))


def _paused_graph(checkpointer: Any) -> Pregel:
    async def node(state: MessagesState) -> dict[str, Any]:
        before = _user()
        answer = interrupt("Go on?")  # the node runs again from the top on resume
        return {"messages": [AIMessage(content=f"paused {before} {answer} {_user()}")]}

    return single_node(node, checkpointer=checkpointer)


def _registry() -> GraphRegistry:
    background = frozenset({GraphFeature.BACKGROUND})
    return GraphRegistry(
        graphs={
            "sync": GraphConfig(graph=_sync_graph(), description="sync", features=background),
            "tools": GraphConfig(graph=_tool_graph(), description="tools"),
            "nested": GraphConfig(graph=_nested_graph(), description="nested"),
            "paused": GraphConfig(
                graph=_paused_graph(InMemorySaver()),
                description="paused",
                features=frozenset({GraphFeature.INTERRUPTS}),
            ),
        },
        run_coordinator=InMemoryRunCoordinator(),
    )


@pytest.fixture
async def app() -> AsyncIterator[FastAPI]:
    """This module's registry, served as the shared `client` expects."""
    registry = _registry()
    background = InMemoryBackgroundBackend(registry)
    application = FastAPI()
    LanggraphOpenaiServe(registry, application, background=background).bind_openai_api()
    async with background.lifespan():
        yield application


@pytest.mark.parametrize("model", ["sync", "tools", "nested"])
async def test_every_kind_of_node_reads_its_request(client: AsyncOpenAI, model: str) -> None:
    response = await client.responses.create(model=model, input="hi", user="ada")
    assert response.output_text == f"{model} ada"
    async with client.responses.stream(model=model, input="hi", user="bob") as stream:
        final = await stream.get_final_response()
    assert final.output_text == f"{model} bob"


async def test_concurrent_runs_each_read_their_own(client: AsyncOpenAI) -> None:
    users = [f"user{number}" for number in range(12)]

    async def ask(user: str) -> str:
        if int(user[4:]) % 2:
            completion = await client.chat.completions.create(
                model="nested", messages=[{"role": "user", "content": "hi"}], user=user
            )
            return completion.choices[0].message.content or ""
        async with client.responses.stream(model="nested", input="hi", user=user) as stream:
            return (await stream.get_final_response()).output_text

    answers = await asyncio.gather(*(ask(user) for user in users))
    assert answers == [f"nested {user}" for user in users]


async def test_a_background_run_reads_its_request(client: AsyncOpenAI) -> None:
    queued = await client.responses.create(model="sync", input="hi", user="ada", background=True)
    async with asyncio.timeout(30):
        while True:
            response = await client.responses.retrieve(queued.id)
            if response.status not in ("queued", "in_progress"):
                break
            await asyncio.sleep(0.05)  # polling for a state, as a client does
    assert response.status == "completed"
    assert response.output_text == "sync ada"


async def test_a_resumed_run_reads_the_resuming_request(client: AsyncOpenAI) -> None:
    paused = await client.responses.create(model="paused", input="hi", user="ada")
    call = next(item for item in paused.output if item.type == "function_call")
    resumed = await client.responses.create(
        model="paused",
        previous_response_id=paused.id,
        user="bob",
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "yes"}],
    )
    # The node ran again from the top under the resuming request, both before and after
    # the question.
    assert resumed.output_text == "paused bob yes bob"
