"""Structured output through the official SDK's parse helpers, in strict mode."""

from __future__ import annotations

import json

import httpx2
import pytest
from openai import APIError, AsyncOpenAI
from pydantic import BaseModel

pytestmark = pytest.mark.anyio

QUESTION = "What is the weather in Paris?"


class Place(BaseModel):
    city: str
    answer: str


class City(BaseModel):
    city: str


class Forecast(BaseModel):
    place: Place
    days: list[int]
    sunny: bool


async def test_responses_parse_returns_the_parsed_object(client: AsyncOpenAI) -> None:
    response = await client.responses.parse(
        model="everything-agent", input=QUESTION, text_format=Forecast
    )
    parsed = response.output_parsed
    assert isinstance(parsed, Forecast)
    assert parsed.place.city == "Paris"
    assert parsed.place.answer == f"You asked: {QUESTION}"
    # The Response says which shape it answers in.
    assert response.text.format.type == "json_schema"
    assert response.text.format.name == "Forecast"  # type: ignore[union-attr]


async def test_responses_stream_parses_the_final_answer(client: AsyncOpenAI) -> None:
    async with client.responses.stream(
        model="everything-agent", input=QUESTION, text_format=Forecast
    ) as stream:
        deltas = [
            event.delta async for event in stream if event.type == "response.output_text.delta"
        ]
        final = await stream.get_final_response()
    assert len(deltas) > 1  # streamed like text, word by word
    assert isinstance(final.output_parsed, Forecast)
    assert json.loads("".join(deltas)) == final.output_parsed.model_dump()


async def test_chat_parse_returns_the_parsed_object(client: AsyncOpenAI) -> None:
    completion = await client.chat.completions.parse(
        model="everything-agent",
        messages=[{"role": "user", "content": QUESTION}],
        response_format=Forecast,
    )
    parsed = completion.choices[0].message.parsed
    assert isinstance(parsed, Forecast)
    assert parsed.sunny is True
    assert parsed.place.city == "Paris"


async def test_chat_stream_parses_the_final_answer(client: AsyncOpenAI) -> None:
    async with client.chat.completions.stream(
        model="everything-agent",
        messages=[{"role": "user", "content": QUESTION}],
        response_format=Forecast,
    ) as stream:
        chunks = [event async for event in stream if event.type == "content.delta"]
        final = await stream.get_final_completion()
    assert len(chunks) > 1
    assert isinstance(final.choices[0].message.parsed, Forecast)


async def test_json_object_answers_a_json_object(client: AsyncOpenAI) -> None:
    response = await client.responses.create(
        model="everything-agent",
        input="Reply in JSON please",
        text={"format": {"type": "json_object"}},
    )
    assert json.loads(response.output_text) == {"answer": "You asked: Reply in JSON please"}
    assert response.text.format.type == "json_object"


async def test_a_graph_breaking_a_strict_schema_fails_the_response(client: AsyncOpenAI) -> None:
    response = await client.responses.parse(model="schema-breaker", input="hi", text_format=City)
    assert response.status == "failed"
    assert response.error is not None
    assert response.error.code == "server_error"
    assert response.error.message == (
        "The graph's answer breaks the strict JSON schema 'City': at city, 42 is not of type "
        "'string'."
    )
    assert response.output == []


async def test_a_broken_strict_schema_answer_fails_the_stream(client: AsyncOpenAI) -> None:
    stream = await client.responses.create(
        model="schema-breaker",
        input="hi",
        text={"format": _format(City)},
        stream=True,
    )
    events: list[str] = []

    async def read_all() -> None:
        async for event in stream:
            events.append(event.type)

    with pytest.raises(APIError, match="breaks the strict JSON schema"):
        await read_all()
    assert "response.completed" not in events


async def test_chat_answer_breaking_a_strict_schema_is_a_clear_error(
    http: httpx2.AsyncClient,
) -> None:
    body = {
        "model": "schema-breaker",
        "messages": [{"role": "user", "content": "hi"}],
        "response_format": {"type": "json_schema", "json_schema": _chat_spec(City)},
    }
    reply = await http.post("/v1/chat/completions", json=body)
    assert reply.status_code == 502
    error = reply.json()["error"]
    assert error["type"] == "server_error"
    assert "at city, 42 is not of type 'string'" in error["message"]


async def test_a_graph_without_structured_output_is_named(http: httpx2.AsyncClient) -> None:
    reply = await http.post(
        "/v1/responses",
        json={"model": "echo", "input": "hi", "text": {"format": _format(Place)}},
    )
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["param"] == "text.format"
    assert "the model 'echo' does not take a JSON schema answer" in error["message"]


async def test_models_listing_shows_the_feature(client: AsyncOpenAI) -> None:
    model = await client.models.retrieve("everything-agent")
    assert "structured_output" in (model.model_extra or {})["lgos"]["features"]


def _format(model: type[BaseModel]) -> dict[str, object]:
    return {"type": "json_schema", **_chat_spec(model)}


def _chat_spec(model: type[BaseModel]) -> dict[str, object]:
    return {"name": model.__name__, "schema": model.model_json_schema(), "strict": True}
