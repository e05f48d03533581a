"""The Responses API through the official SDK in strict mode: JSON and streams."""

from __future__ import annotations

import json

import httpx2
import pytest
from openai import APIError, AsyncOpenAI
from openai.types.responses import Response

pytestmark = pytest.mark.anyio


async def test_a_string_input_gets_the_graph_answer(client: AsyncOpenAI) -> None:
    response = await client.responses.create(model="echo", input="hello")
    assert response.status == "completed"
    assert response.output_text == "echo: human:hello"
    assert response.output[0].type == "message"
    assert response.output[0].phase == "final_answer"
    assert response.completed_at is not None
    assert response.previous_response_id is None


async def test_item_input_and_instructions_reach_the_graph_in_order(client: AsyncOpenAI) -> None:
    response = await client.responses.create(
        model="echo",
        instructions="Be brief",
        input=[
            {"role": "user", "content": "first"},
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": "reply", "annotations": []}],
            },
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "second"}],
            },
        ],
    )
    assert response.output_text == "echo: system:Be brief|human:first|ai:reply|human:second"
    assert response.instructions == "Be brief"


async def test_client_settings_change_the_answer(client: AsyncOpenAI) -> None:
    response = await client.responses.create(
        model="echo",
        input="x",
        metadata={"lgos_settings": json.dumps({"prefix": "hey", "repeat": 2}), "team": "a"},
    )
    assert response.output_text == "hey: human:xhuman:x"
    assert response.metadata == {
        "lgos_settings": json.dumps({"prefix": "hey", "repeat": 2}),
        "team": "a",
    }


async def test_stream_helper_accumulates_the_same_text(client: AsyncOpenAI) -> None:
    deltas = []
    async with client.responses.stream(model="echo", input="streamed") as stream:
        async for event in stream:
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
        final = await stream.get_final_response()
    assert len(deltas) > 1, "the answer should stream in several deltas"
    assert "".join(deltas) == final.output_text == "echo: human:streamed"


async def test_raw_stream_follows_the_event_lifecycle(http: httpx2.AsyncClient) -> None:
    async with http.stream(
        "POST", "/v1/responses", json={"model": "echo", "input": "hi", "stream": True}
    ) as response:
        assert response.headers["content-type"].startswith("text/event-stream")
        body = (await response.aread()).decode()
    frames = [frame for frame in body.split("\n\n") if frame.strip()]
    events = []
    for frame in frames:
        lines = frame.split("\n")
        assert not any(line.startswith("id:") for line in lines), "no SSE ids (SDK hazard)"
        name = next(line[len("event: ") :] for line in lines if line.startswith("event: "))
        data = json.loads(
            next(line[len("data: ") :] for line in lines if line.startswith("data: "))
        )
        assert data["type"] == name
        events.append(data)
    assert [event["sequence_number"] for event in events] == list(range(len(events)))
    kinds = [event["type"] for event in events]
    assert kinds[:4] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
    ]
    assert kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    final = events[-1]["response"]
    # The Open Responses field set is complete (nulls where empty).
    for key in (
        "completed_at",
        "previous_response_id",
        "truncation",
        "text",
        "presence_penalty",
        "frequency_penalty",
        "top_logprobs",
        "reasoning",
        "user",
        "usage",
        "max_output_tokens",
        "max_tool_calls",
        "store",
        "background",
        "service_tier",
        "safety_identifier",
        "prompt_cache_key",
        "incomplete_details",
        "error",
        "instructions",
        "tools",
    ):
        assert key in final


async def test_status_events_are_commentary_before_the_answer(client: AsyncOpenAI) -> None:
    async with client.responses.stream(model="progress", input="go") as stream:
        final = await stream.get_final_response()
    phases = [(item.phase, item.content[0].text) for item in final.output]  # type: ignore[union-attr]
    assert phases == [
        ("commentary", "Step one"),
        ("commentary", "Step two"),
        ("final_answer", "All done."),
    ]


async def test_non_streaming_leaves_commentary_out(client: AsyncOpenAI) -> None:
    response = await client.responses.create(model="progress", input="go")
    assert response.output_text == "All done."
    assert len(response.output) == 1


async def test_client_function_tools_round_trip(client: AsyncOpenAI) -> None:
    tools = [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        }
    ]
    first = await client.responses.create(model="tool-caller", input="weather?", tools=tools)
    call = first.output[0]
    assert call.type == "function_call"
    assert call.name == "get_weather"
    assert json.loads(call.arguments) == {"city": "Paris"}
    assert first.tools[0].name == "get_weather"  # type: ignore[union-attr]
    second = await client.responses.create(
        model="tool-caller",
        tools=tools,
        input=[
            {"role": "user", "content": "weather?"},
            {
                "type": "function_call",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": call.arguments,
            },
            {"type": "function_call_output", "call_id": call.call_id, "output": "sunny"},
        ],
    )
    assert second.output_text == "The tool said: sunny"


async def test_streamed_tool_call_arrives_whole(client: AsyncOpenAI) -> None:
    tools = [{"type": "function", "name": "get_weather", "parameters": {"type": "object"}}]
    async with client.responses.stream(model="tool-caller", input="w", tools=tools) as stream:
        final = await stream.get_final_response()
    assert [item.type for item in final.output] == ["function_call"]


async def test_citations_become_url_citation_annotations(client: AsyncOpenAI) -> None:
    for stream in (False, True):
        if stream:
            async with client.responses.stream(model="cited", input="?") as events:
                response = await events.get_final_response()
        else:
            response = await client.responses.create(model="cited", input="?")
        part = response.output[0].content[0]  # type: ignore[union-attr]
        annotation = part.annotations[0]
        assert annotation.type == "url_citation"
        assert annotation.url == "https://example.org/langgraph"
        assert part.text[annotation.start_index : annotation.end_index] == "LangGraph runs graphs."


async def test_a_graph_failing_mid_stream_ends_with_error_then_failed(
    http: httpx2.AsyncClient,
) -> None:
    async with http.stream(
        "POST", "/v1/responses", json={"model": "failing", "input": "hi", "stream": True}
    ) as response:
        body = (await response.aread()).decode()
    events = [json.loads(line[6:]) for line in body.split("\n") if line.startswith("data: ")]
    kinds = [event["type"] for event in events]
    assert kinds[-2:] == ["error", "response.failed"]
    assert "secret internal detail" not in body
    failed = events[-1]["response"]
    assert failed["status"] == "failed"
    assert failed["error"]["code"] == "server_error"
    # What was already shown stays, marked incomplete.
    assert failed["output"][0]["status"] == "incomplete"
    assert failed["output"][0]["content"][0]["text"].startswith("partial")


async def test_sdk_raises_on_a_failed_stream(client: AsyncOpenAI) -> None:
    async def consume() -> None:
        async with client.responses.stream(model="failing", input="hi") as stream:
            async for _event in stream:
                pass

    with pytest.raises(APIError):
        await consume()


async def test_a_request_error_mid_stream_ends_in_a_response_the_sdk_accepts(
    http: httpx2.AsyncClient, client: AsyncOpenAI
) -> None:
    # The `error` event keeps the graph's own code (the SDK raises it); the failed Response
    # (also what a later poll of a background run shows) carries one of the codes OpenAI's
    # Response defines, which strict validation requires.
    async def consume() -> None:
        async with client.responses.stream(model="refusing", input="hi") as stream:
            async for _event in stream:
                pass

    with pytest.raises(APIError) as raised:
        await consume()
    assert raised.value.message == "That city is not covered."
    assert raised.value.code == "city_not_covered"
    async with http.stream(
        "POST", "/v1/responses", json={"model": "refusing", "input": "hi", "stream": True}
    ) as response:
        body = (await response.aread()).decode()
    events = [json.loads(line[6:]) for line in body.split("\n") if line.startswith("data: ")]
    failed = Response.model_validate(events[-1]["response"])
    assert failed.error is not None
    assert (failed.error.code, failed.error.message) == (
        "invalid_prompt",
        "That city is not covered.",
    )


async def test_a_graph_failing_without_stream_is_a_generic_500(http: httpx2.AsyncClient) -> None:
    response = await http.post("/v1/responses", json={"model": "failing", "input": "hi"})
    assert response.status_code == 500
    assert response.json()["error"]["type"] == "server_error"
    assert "secret" not in response.text


async def test_request_id_is_echoed_or_generated(http: httpx2.AsyncClient) -> None:
    sent = await http.get("/v1/models", headers={"X-Request-ID": "req-123"})
    assert sent.headers["x-request-id"] == "req-123"
    insane = await http.get("/v1/models", headers={"X-Request-ID": "bad id with spaces"})
    assert insane.headers["x-request-id"] != "bad id with spaces"
    assert len(insane.headers["x-request-id"]) == 32


async def test_model_calls_tagged_nostream_do_not_stream(client: AsyncOpenAI) -> None:
    deltas = []
    async with client.responses.stream(model="private-calls", input="?") as stream:
        async for event in stream:
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
        final = await stream.get_final_response()
    assert "".join(deltas) == final.output_text == "the public answer"


async def test_tokens_from_subgraphs_stream(client: AsyncOpenAI) -> None:
    deltas = []
    async with client.responses.stream(model="subgraph", input="deep") as stream:
        async for event in stream:
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
        final = await stream.get_final_response()
    assert len(deltas) > 1
    assert "".join(deltas) == final.output_text == "echo: human:deep"


async def test_usage_comes_from_the_answer_message(client: AsyncOpenAI) -> None:
    response = await client.responses.create(model="metered", input="?")
    assert response.usage is not None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (12, 3)
    assert response.usage.input_tokens_details.cached_tokens == 4
    assert response.usage.output_tokens_details.reasoning_tokens == 1
    stream = await client.chat.completions.create(
        model="metered",
        messages=[{"role": "user", "content": "?"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = [chunk async for chunk in stream]
    usage = chunks[-1].usage
    assert usage is not None
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (12, 3, 15)
