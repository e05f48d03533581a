"""Reasoning of the graph's model: Responses `reasoning` items with summaries, streamed and not."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai import AsyncOpenAI, BadRequestError

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


async def replayed(client: AsyncOpenAI, items: list[Any]) -> list[dict[str, Any]]:
    """The messages `message-report` received for `items`."""
    response = await client.responses.create(model="message-report", input=items)
    return json.loads(response.output_text)  # type: ignore[no-any-return]


async def test_replayed_reasoning_reaches_the_graph_on_its_ai_message(
    client: AsyncOpenAI,
) -> None:
    """The Agents SDK sends a turn's output back as the next turn's input, reasoning items
    included: the graph gets each on the AI message it led to, as a LangChain reasoning block."""
    tool = {"type": "function", "name": "get_weather", "parameters": {"type": "object"}}
    first = await client.responses.create(
        model="everything-agent",
        input="weather?",
        tools=[tool],  # type: ignore[list-item]
        tool_choice="required",
        reasoning=SUMMARY_ASKED,
    )
    reasoning, call = first.output
    assert reasoning.type == "reasoning"
    assert call.type == "function_call"
    items = [
        {"role": "user", "content": "weather?"},
        *(item.model_dump(exclude_unset=True) for item in first.output),
        {"type": "function_call_output", "call_id": call.call_id, "output": "Sunny"},
    ]
    messages = await replayed(client, items)
    assert [message["type"] for message in messages] == ["human", "ai", "tool"]
    assert messages[1]["content"] == [
        {
            "type": "reasoning",
            "id": reasoning.id,
            "reasoning": "The question needs get_weather, so I call it first.",
        }
    ]
    assert messages[1]["tool_calls"] == [call.call_id]


async def test_replayed_reasoning_keeps_every_part_before_the_answer_text(
    client: AsyncOpenAI,
) -> None:
    items = [
        {"role": "user", "content": "hi"},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [
                {"type": "summary_text", "text": "First thought."},
                {"type": "summary_text", "text": "Second thought."},
            ],
            "encrypted_content": "opaque",
        },
        {"role": "assistant", "content": "Hello"},
        {"type": "reasoning", "id": "rs_2", "summary": []},
        {"role": "user", "content": "again"},
    ]
    messages = await replayed(client, items)
    assert [message["type"] for message in messages] == ["human", "ai", "ai", "human"]
    extras = {"encrypted_content": "opaque"}
    assert messages[1]["content"] == [
        {"type": "reasoning", "id": "rs_1", "extras": extras, "reasoning": "First thought."},
        {"type": "reasoning", "id": "rs_1", "extras": extras, "reasoning": "Second thought."},
        {"type": "text", "text": "Hello"},
    ]
    # Reasoning with no answer after it (and no summary) still arrives, by its id.
    assert messages[2]["content"] == [{"type": "reasoning", "id": "rs_2"}]


async def test_a_malformed_reasoning_item_is_a_400_naming_the_field(client: AsyncOpenAI) -> None:
    bad = {"type": "reasoning", "id": "rs_1", "summary": [{"type": "text", "text": "x"}]}
    with pytest.raises(BadRequestError) as caught:
        await client.responses.create(
            model="message-report",
            input=[{"role": "user", "content": "hi"}, bad],  # type: ignore[list-item]
        )
    assert caught.value.param == "input[1].summary[0].type"


async def test_chat_takes_the_reasoning_object_too(client: AsyncOpenAI) -> None:
    """Clients written for providers that take Responses' `reasoning` object in Chat requests
    (llm-comply's reasoning test sends it beside `reasoning_effort`) reach the graph too."""

    async def reasoning_tokens(**options: Any) -> int:
        completion = await client.chat.completions.create(
            model="everything-agent",
            messages=[{"role": "user", "content": "Hello"}],
            **options,
        )
        assert completion.usage is not None
        assert completion.usage.completion_tokens_details is not None
        return completion.usage.completion_tokens_details.reasoning_tokens or 0

    plain = await reasoning_tokens()
    # The fake's reasoning gains "Effort: low." (two tokens) when the effort reaches it.
    assert await reasoning_tokens(extra_body={"reasoning": {"effort": "low"}}) == plain + 2
    both = {"reasoning_effort": "low", "extra_body": {"reasoning": {"summary": "auto"}}}
    assert await reasoning_tokens(**both) == plain + 2
