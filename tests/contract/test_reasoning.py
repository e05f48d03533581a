"""Reasoning of the graph's model: Responses `reasoning` items with summaries, streamed and not."""

from __future__ import annotations

import pytest
from openai import AsyncOpenAI

pytestmark = pytest.mark.anyio

SUMMARY = "I read the question and answer it directly."


SUMMARY_ASKED = {"summary": "auto"}


async def test_the_answer_comes_with_its_reasoning(client: AsyncOpenAI) -> None:
    response = await client.responses.create(
        model="everything-agent", input="Hello", reasoning=SUMMARY_ASKED
    )
    assert [item.type for item in response.output] == ["reasoning", "message"]
    reasoning = response.output[0]
    assert reasoning.type == "reasoning"
    assert [part.text for part in reasoning.summary] == [SUMMARY]
    assert reasoning.id.startswith("rs_")
    assert response.output_text == "You asked: Hello"
    assert response.usage is not None
    assert response.usage.output_tokens_details.reasoning_tokens == len(SUMMARY.split())


async def test_reasoning_streams_as_summary_events(client: AsyncOpenAI) -> None:
    async with client.responses.stream(
        model="everything-agent", input="Hello", reasoning=SUMMARY_ASKED
    ) as stream:
        events = [event async for event in stream]
        final = await stream.get_final_response()
    kinds = [event.type for event in events]
    summary_events = [
        "response.reasoning_summary_part.added",
        "response.reasoning_summary_text.delta",
        "response.reasoning_summary_text.done",
        "response.reasoning_summary_part.done",
    ]
    assert [kind for kind in kinds if kind.startswith("response.reasoning")] == summary_events
    # The reasoning item closes before the answer opens.
    assert kinds.index("response.reasoning_summary_part.done") < kinds.index(
        "response.output_text.delta"
    )
    assert [item.type for item in final.output] == ["reasoning", "message"]
    assert final.output[0].summary[0].text == SUMMARY  # type: ignore[union-attr]
    assert final.output_text == "You asked: Hello"


async def test_a_tool_call_turn_explains_its_call(client: AsyncOpenAI) -> None:
    tool = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
    response = await client.responses.create(
        model="everything-agent",
        input="weather?",
        tools=[tool],  # type: ignore[list-item]
        tool_choice="required",
        reasoning=SUMMARY_ASKED,
    )
    assert [item.type for item in response.output] == ["reasoning", "function_call"]
    assert response.output[0].summary[0].text == (  # type: ignore[union-attr]
        "The question needs get_weather, so I call it first."
    )


async def test_without_a_summary_asked_the_reasoning_item_is_empty(client: AsyncOpenAI) -> None:
    async with client.responses.stream(model="everything-agent", input="Hello") as stream:
        kinds = [event.type async for event in stream]
        final = await stream.get_final_response()
    assert not [kind for kind in kinds if kind.startswith("response.reasoning")]
    assert final.output[0].type == "reasoning"
    assert final.output[0].summary == []
    assert final.reasoning is None


async def test_effort_reaches_the_graph(client: AsyncOpenAI) -> None:
    response = await client.responses.create(
        model="everything-agent", input="Hello", reasoning={"effort": "low", "summary": "concise"}
    )
    assert response.output[0].summary[0].text == f"{SUMMARY} Effort: low."  # type: ignore[union-attr]
    assert response.reasoning is not None
    assert (response.reasoning.effort, response.reasoning.summary) == ("low", "concise")
    completion = await client.chat.completions.create(
        model="everything-agent",
        messages=[{"role": "user", "content": "Hello"}],
        reasoning_effort="high",
    )
    assert completion.choices[0].message.content == "You asked: Hello"
