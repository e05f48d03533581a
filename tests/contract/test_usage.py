"""Usage: every finished Response and completion reports the sum of the graph's model calls,
with OpenAI's detail objects, and zeros when the graph called no model."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from fastapi import FastAPI
from langgraph.constants import TAG_NOSTREAM
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.pregel import Pregel
from openai import AsyncOpenAI

from demo.graphs.fake_model import ScriptedChatModel
from lgos import GraphConfig, GraphRegistry, LanggraphOpenaiServe
from lgos.wire import ids
from tests.support.sdk import in_process_sdk

pytestmark = pytest.mark.anyio

# counted_graph on input "count": plan 1 in + 2 out, answer 1 in + 3 out.
COUNTED = (2, 5, 7)


async def test_responses_sum_every_model_call(client: AsyncOpenAI) -> None:
    response = await client.responses.create(model="counted", input="count")
    assert response.output_text == "one two three"
    assert response.usage is not None
    usage = response.usage
    assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == COUNTED
    assert usage.input_tokens_details.cached_tokens == 0
    assert usage.output_tokens_details.reasoning_tokens == 0

    async with client.responses.stream(model="counted", input="count") as stream:
        final = await stream.get_final_response()
    assert final.usage is not None
    assert (final.usage.input_tokens, final.usage.output_tokens) == COUNTED[:2]


async def test_a_graph_without_model_calls_reports_zeros(client: AsyncOpenAI) -> None:
    response = await client.responses.create(model="progress", input="go")
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.total_tokens) == (0, 0)
    assert response.usage.input_tokens_details.cached_tokens == 0
    assert response.usage.output_tokens_details.reasoning_tokens == 0
    completion = await client.chat.completions.create(
        model="progress", messages=[{"role": "user", "content": "go"}]
    )
    assert completion.usage is not None
    assert completion.usage.total_tokens == 0
    assert completion.usage.prompt_tokens_details is not None
    assert completion.usage.prompt_tokens_details.cached_tokens == 0
    assert completion.usage.completion_tokens_details is not None
    assert completion.usage.completion_tokens_details.reasoning_tokens == 0


async def test_chat_reports_usage_and_a_stable_fingerprint(client: AsyncOpenAI) -> None:
    completion = await client.chat.completions.create(
        model="counted", messages=[{"role": "user", "content": "count"}]
    )
    assert completion.usage is not None
    assert (
        completion.usage.prompt_tokens,
        completion.usage.completion_tokens,
        completion.usage.total_tokens,
    ) == COUNTED
    assert completion.system_fingerprint == ids.system_fingerprint()
    assert completion.system_fingerprint.startswith("fp_")

    stream = await client.chat.completions.create(
        model="counted",
        messages=[{"role": "user", "content": "count"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]
    assert {chunk.system_fingerprint for chunk in chunks} == {completion.system_fingerprint}
    last = chunks[-1]
    assert last.choices == []
    assert last.usage is not None
    assert (last.usage.prompt_tokens, last.usage.completion_tokens) == COUNTED[:2]


async def test_a_pause_reports_the_calls_made_before_it(client: AsyncOpenAI) -> None:
    paused = await client.responses.create(model="counted-review", input="count")
    call = next(item for item in paused.output if item.type == "function_call")
    assert paused.usage is not None
    assert (paused.usage.input_tokens, paused.usage.output_tokens) == (1, 2)  # the plan only
    resumed = await client.responses.create(
        model="counted-review",
        previous_response_id=paused.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "yes"}],
    )
    assert resumed.output_text == "one two three"
    assert resumed.usage is not None
    assert (resumed.usage.input_tokens, resumed.usage.output_tokens) == (1, 3)  # the answer


async def test_background_responses_report_usage(client: AsyncOpenAI) -> None:
    queued = await client.responses.create(model="counted", input="count", background=True)
    assert queued.usage is None  # not finished yet, as OpenAI reports it
    async with asyncio.timeout(30):
        while True:
            response = await client.responses.retrieve(queued.id)
            if response.status not in ("queued", "in_progress"):
                break
            await asyncio.sleep(0.05)  # polling for a state, as a client does
    assert response.status == "completed"
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == COUNTED[:2]


def _spread_graph() -> Pregel:
    """Model calls where a run's callbacks travel least directly: a sync node (LangGraph runs it
    in a thread), a task a node starts itself (both private), and a subgraph's node (the
    answer). With input "count", each call is 1 in + 2 out."""

    def in_a_thread(state: MessagesState) -> dict[str, Any]:
        model = ScriptedChatModel(script=lambda _m: "sync call").with_config(tags=[TAG_NOSTREAM])
        model.invoke(state["messages"][:1])
        return {}

    async def in_a_task(state: MessagesState) -> dict[str, Any]:
        model = ScriptedChatModel(script=lambda _m: "task call").with_config(tags=[TAG_NOSTREAM])
        await asyncio.create_task(model.ainvoke(state["messages"][:1]))
        return {}

    async def answer(state: MessagesState) -> dict[str, Any]:
        model = ScriptedChatModel(script=lambda _m: "inner answer")
        return {"messages": [await model.ainvoke(state["messages"][:1])]}

    inner = StateGraph(MessagesState)
    inner.add_node("answer", answer)
    inner.add_edge(START, "answer")
    inner.add_edge("answer", END)
    outer = StateGraph(MessagesState)
    outer.add_node("thread", in_a_thread)
    outer.add_node("task", in_a_task)
    outer.add_node("inner", inner.compile())
    outer.add_edge(START, "thread")
    outer.add_edge("thread", "task")
    outer.add_edge("task", "inner")
    outer.add_edge("inner", END)
    return outer.compile()


async def test_usage_counts_calls_in_threads_tasks_and_subgraphs() -> None:
    registry = GraphRegistry(
        graphs={"spread": GraphConfig(graph=_spread_graph(), description="Calls models apart")}
    )
    application = FastAPI()
    LanggraphOpenaiServe(registry, application).bind_openai_api()
    async with in_process_sdk(application) as client:
        response = await client.responses.create(model="spread", input="count")
        async with client.responses.stream(model="spread", input="count") as stream:
            streamed = await stream.get_final_response()
        completion = await client.chat.completions.create(
            model="spread", messages=[{"role": "user", "content": "count"}]
        )
    for usage in (response.usage, streamed.usage):
        assert usage is not None
        assert (usage.input_tokens, usage.output_tokens, usage.total_tokens) == (3, 6, 9)
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (3, 6)
