"""Stored Responses through the official SDK in strict mode (the app in-process)."""

from __future__ import annotations

import openai
import pytest
from openai import AsyncOpenAI

pytestmark = pytest.mark.anyio


async def test_a_response_is_stored_retrieved_listed_and_deleted(client: AsyncOpenAI) -> None:
    created = await client.responses.create(model="echo", input="hi")
    assert created.store is True
    fetched = await client.responses.retrieve(created.id)
    assert fetched.output_text == created.output_text == "echo: human:hi"
    listing = await client.responses.input_items.list(created.id)
    assert [item.type for item in listing.data] == ["message"]
    await client.responses.delete(created.id)
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(created.id)
    with pytest.raises(openai.NotFoundError):
        await client.responses.input_items.list(created.id)
    with pytest.raises(openai.NotFoundError):
        await client.responses.delete(created.id)


async def test_store_false_keeps_nothing(client: AsyncOpenAI) -> None:
    created = await client.responses.create(model="echo", input="hi", store=False)
    assert created.store is False
    with pytest.raises(openai.NotFoundError) as caught:
        await client.responses.retrieve(created.id)
    assert "not found" in caught.value.message
    with pytest.raises(openai.BadRequestError) as bad:
        await client.responses.create(model="echo", input="again", previous_response_id=created.id)
    assert bad.value.code == "previous_response_not_found"


async def test_input_items_paginate_in_both_orders(client: AsyncOpenAI) -> None:
    turns = [{"role": "user", "content": f"u{n}"} for n in range(5)]
    created = await client.responses.create(model="echo", input=turns)  # type: ignore[arg-type]
    ascending = [
        item.content[0].text  # type: ignore[union-attr]
        async for item in client.responses.input_items.list(created.id, order="asc", limit=2)
    ]
    assert ascending == ["u0", "u1", "u2", "u3", "u4"]
    first = await client.responses.input_items.list(created.id, limit=2)
    assert first.has_more is True
    assert [item.content[0].text for item in first.data] == ["u4", "u3"]  # type: ignore[union-attr]
    descending = [
        item.content[0].text  # type: ignore[union-attr]
        async for item in client.responses.input_items.list(created.id, limit=2)
    ]
    assert descending == ["u4", "u3", "u2", "u1", "u0"]


async def test_a_stored_stream_replays(client: AsyncOpenAI) -> None:
    async with client.responses.stream(model="echo", input="hi") as stream:
        final = await stream.get_final_response()
    replayed = await client.responses.retrieve(final.id, stream=True)
    events = [event async for event in replayed]
    assert events[0].type == "response.created"
    assert events[-1].type == "response.completed"
    later = await client.responses.retrieve(final.id, stream=True, starting_after=3)
    tail = [event.sequence_number async for event in later]
    assert tail[0] == 4
    assert tail[-1] == events[-1].sequence_number


async def test_a_synchronous_response_cannot_be_cancelled(client: AsyncOpenAI) -> None:
    created = await client.responses.create(model="echo", input="hi")
    with pytest.raises(openai.BadRequestError):
        await client.responses.cancel(created.id)
