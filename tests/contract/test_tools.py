"""Client tools, every `tool_choice` and hosted tool types, through the strict SDK."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from openai import AsyncOpenAI

pytestmark = pytest.mark.anyio

PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
WEATHER = {"type": "function", "name": "get_weather", "parameters": PARAMETERS, "strict": True}
TIME = {"type": "function", "name": "get_time", "parameters": PARAMETERS, "strict": True}
CHAT_WEATHER = {"type": "function", "function": {"name": "get_weather", "parameters": PARAMETERS}}
CHAT_TIME = {"type": "function", "function": {"name": "get_time", "parameters": PARAMETERS}}
SEARCH = {"type": "file_search", "vector_store_ids": ["vs_docs"]}
QUESTION = "What is the weather and the time in Paris?"


async def _calls(client: AsyncOpenAI, **options: Any) -> list[tuple[str, dict[str, Any]]]:
    response = await client.responses.create(
        model="everything-agent", input=QUESTION, tools=[WEATHER, TIME], **options
    )
    return [
        (item.name, json.loads(item.arguments))
        for item in response.output
        if item.type == "function_call"
    ]


async def test_auto_calls_the_relevant_tools_in_parallel(client: AsyncOpenAI) -> None:
    assert await _calls(client) == [
        ("get_weather", {"city": "Paris"}),
        ("get_time", {"city": "Paris"}),
    ]


async def test_parallel_tool_calls_false_makes_one_call(client: AsyncOpenAI) -> None:
    assert await _calls(client, parallel_tool_calls=False) == [("get_weather", {"city": "Paris"})]


async def test_none_answers_without_calling(client: AsyncOpenAI) -> None:
    assert await _calls(client, tool_choice="none") == []


async def test_a_named_function_is_the_one_called(client: AsyncOpenAI) -> None:
    choice = {"type": "function", "name": "get_time"}
    assert await _calls(client, tool_choice=choice) == [("get_time", {"city": "Paris"})]


async def test_required_calls_a_tool_even_for_an_unrelated_question(client: AsyncOpenAI) -> None:
    response = await client.responses.create(
        model="everything-agent", input="Hello there", tools=[WEATHER], tool_choice="required"
    )
    assert [item.type for item in response.output] == ["reasoning", "function_call"]
    auto = await client.responses.create(
        model="everything-agent", input="Hello there", tools=[WEATHER]
    )
    assert [item.type for item in auto.output] == ["reasoning", "message"]


async def test_allowed_tools_limit_the_choice(client: AsyncOpenAI) -> None:
    choice = {
        "type": "allowed_tools",
        "mode": "required",
        "tools": [{"type": "function", "name": "get_time"}],
    }
    response = await client.responses.create(
        model="everything-agent",
        input=QUESTION,
        tools=[WEATHER, TIME],
        tool_choice=choice,  # type: ignore[arg-type]
    )
    assert [item.name for item in response.output if item.type == "function_call"] == ["get_time"]
    assert response.tool_choice.type == "allowed_tools"  # type: ignore[union-attr]


async def test_tool_output_comes_back_into_the_answer(client: AsyncOpenAI) -> None:
    first = await client.responses.create(
        model="everything-agent", input=QUESTION, tools=[WEATHER], tool_choice="required"
    )
    call = next(item for item in first.output if item.type == "function_call")
    second = await client.responses.create(
        model="everything-agent",
        tools=[WEATHER],
        input=[
            {"role": "user", "content": QUESTION},
            {
                "type": "function_call",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": call.arguments,
            },
            {"type": "function_call_output", "call_id": call.call_id, "output": "Sunny, 21 C"},
        ],
    )
    assert second.output_text.startswith("Tool results: Sunny, 21 C.")


@pytest.mark.parametrize("field", ["async", "async_"])
async def test_a_replayed_call_may_carry_a_null_async_field(
    http: httpx2.AsyncClient, field: str
) -> None:
    """LiteLLM adds `"async": null` to the function calls it relays; the Agents SDK sends it
    back as `async_` (the SDK type's field name). Null is accepted, any value is refused."""

    async def post(value: Any) -> httpx2.Response:
        call = {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": "{}",
            field: value,
        }
        return await http.post(
            "/v1/responses",
            json={
                "model": "everything-agent",
                "input": [
                    {"role": "user", "content": QUESTION},
                    call,
                    {"type": "function_call_output", "call_id": "call_1", "output": "Sunny"},
                ],
            },
        )

    assert (await post(None)).status_code == 200
    refused = await post(True)
    assert refused.status_code == 400
    assert refused.json()["error"]["param"] == f"input[1].{field}"


async def test_chat_tool_choice_forms(client: AsyncOpenAI) -> None:
    async def names(**options: Any) -> list[str]:
        completion = await client.chat.completions.create(
            model="everything-agent",
            messages=[{"role": "user", "content": QUESTION}],
            tools=[CHAT_WEATHER, CHAT_TIME],  # type: ignore[list-item]
            **options,
        )
        message = completion.choices[0].message
        return [call.function.name for call in message.tool_calls or ()]  # type: ignore[union-attr]

    assert await names() == ["get_weather", "get_time"]
    assert await names(parallel_tool_calls=False) == ["get_weather"]
    assert await names(tool_choice="none") == []
    assert await names(tool_choice={"type": "function", "function": {"name": "get_time"}}) == [
        "get_time"
    ]
    allowed = {
        "type": "allowed_tools",
        "allowed_tools": {
            "mode": "auto",
            "tools": [{"type": "function", "function": {"name": "get_time"}}],
        },
    }
    assert await names(tool_choice=allowed) == ["get_time"]


async def test_streamed_tool_calls(client: AsyncOpenAI) -> None:
    async with client.responses.stream(
        model="everything-agent", input=QUESTION, tools=[WEATHER], tool_choice="required"
    ) as stream:
        final = await stream.get_final_response()
    calls = [item for item in final.output if item.type == "function_call"]
    assert [(call.name, json.loads(call.arguments)) for call in calls] == [
        ("get_weather", {"city": "Paris"})
    ]


async def test_hosted_tools_reach_a_graph_that_runs_them(client: AsyncOpenAI) -> None:
    response = await client.responses.create(
        model="request-report",
        input="search",
        tools=[SEARCH, WEATHER],  # type: ignore[list-item]
        tool_choice={"type": "file_search"},
        parallel_tool_calls=False,
    )
    report = json.loads(response.output_text)
    assert report["hosted_tools"] == [SEARCH]
    assert report["tools"] == ["get_weather"]
    assert report["tool_choice"] == "HostedToolChoice(type='file_search')"
    assert report["parallel_tool_calls"] is False
    assert [tool.type for tool in response.tools] == ["file_search", "function"]


async def test_a_hosted_tool_the_graph_does_not_run_is_named(http: httpx2.AsyncClient) -> None:
    reply = await http.post(
        "/v1/responses",
        json={
            "model": "everything-agent",
            "input": "x",
            "tools": [WEATHER, {"type": "code_interpreter", "container": {"type": "auto"}}],
        },
    )
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["param"] == "tools[1].type"
    assert (
        "'code_interpreter' tools are not supported by the model 'everything-agent'"
        in error["message"]
    )


async def test_truncation_and_include_reach_the_graph(client: AsyncOpenAI) -> None:
    response = await client.responses.create(
        model="request-report",
        input="hi",
        truncation="auto",
        include=["reasoning.encrypted_content"],
    )
    assert json.loads(response.output_text)["truncation"] == "auto"
    assert response.truncation == "auto"
