"""Chat Completions through the official SDK in strict mode."""

from __future__ import annotations

import json

import httpx2
import pytest
from openai import APIError, AsyncOpenAI

pytestmark = pytest.mark.anyio


async def test_completion_carries_the_answer(client: AsyncOpenAI) -> None:
    completion = await client.chat.completions.create(
        model="echo",
        messages=[{"role": "system", "content": "Be brief"}, {"role": "user", "content": "hi"}],
    )
    choice = completion.choices[0]
    assert choice.message.content == "echo: system:Be brief|human:hi"
    assert choice.finish_reason == "stop"
    assert completion.id.startswith("chatcmpl-")


async def test_stream_with_usage_chunk_last(client: AsyncOpenAI) -> None:
    stream = await client.chat.completions.create(
        model="echo",
        messages=[{"role": "user", "content": "streamed"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]
    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "echo: human:streamed"
    assert chunks[0].choices[0].delta.role == "assistant"
    assert all(c.choices[0].delta.role is None for c in chunks[1:] if c.choices)
    finishes = [
        c.choices[0].finish_reason for c in chunks if c.choices and c.choices[0].finish_reason
    ]
    assert finishes == ["stop"]
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert all(c.usage is None for c in chunks[:-1])


async def test_stream_helper_gives_the_final_message(client: AsyncOpenAI) -> None:
    async with client.chat.completions.stream(
        model="echo", messages=[{"role": "user", "content": "x"}]
    ) as stream:
        async for _event in stream:
            pass
        final = await stream.get_final_completion()
    assert final.choices[0].message.content == "echo: human:x"


async def test_tool_calls_both_ways(client: AsyncOpenAI) -> None:
    tools = [
        {
            "type": "function",
            "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}},
        }
    ]
    first = await client.chat.completions.create(
        model="tool-caller", messages=[{"role": "user", "content": "weather?"}], tools=tools
    )
    message = first.choices[0].message
    assert first.choices[0].finish_reason == "tool_calls"
    assert message.tool_calls is not None
    call = message.tool_calls[0]
    assert call.function.name == "get_weather"  # type: ignore[union-attr]
    second = await client.chat.completions.create(
        model="tool-caller",
        tools=tools,
        messages=[
            {"role": "user", "content": "weather?"},
            message.model_dump(exclude_none=True),  # type: ignore[list-item]
            {"role": "tool", "tool_call_id": call.id, "content": "rainy"},
        ],
    )
    assert second.choices[0].message.content == "The tool said: rainy"


async def test_streamed_tool_calls_accumulate_cleanly(client: AsyncOpenAI) -> None:
    tools = [
        {"type": "function", "function": {"name": "get_weather", "parameters": {"type": "object"}}}
    ]
    async with client.chat.completions.stream(
        model="tool-caller", messages=[{"role": "user", "content": "w"}], tools=tools
    ) as stream:
        async for _event in stream:
            pass
        final = await stream.get_final_completion()
    calls = final.choices[0].message.tool_calls
    assert calls is not None
    assert calls[0].function.name == "get_weather"  # type: ignore[union-attr]
    assert json.loads(calls[0].function.arguments) == {"city": "Paris"}  # type: ignore[union-attr]


async def test_a_failing_stream_sends_an_error_chunk_then_done(http: httpx2.AsyncClient) -> None:
    async with http.stream(
        "POST",
        "/v1/chat/completions",
        json={"model": "failing", "messages": [{"role": "user", "content": "x"}], "stream": True},
    ) as response:
        body = (await response.aread()).decode()
    data = [line[6:] for line in body.split("\n") if line.startswith("data: ")]
    assert data[-1] == "[DONE]"
    assert json.loads(data[-2])["error"]["code"] == "server_error"
    assert "secret" not in body


async def test_sdk_raises_on_the_error_chunk(client: AsyncOpenAI) -> None:
    stream = await client.chat.completions.create(
        model="failing", messages=[{"role": "user", "content": "x"}], stream=True
    )
    with pytest.raises(APIError):
        async for _chunk in stream:
            pass
