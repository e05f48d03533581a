"""The Conversations API through the official SDK in strict mode (the app in-process)."""

from __future__ import annotations

import openai
import pytest
from openai import AsyncOpenAI

pytestmark = pytest.mark.anyio


async def test_items_are_added_read_and_deleted(client: AsyncOpenAI) -> None:
    conversation = await client.conversations.create(
        items=[{"type": "message", "role": "user", "content": "first"}], metadata={"a": "1"}
    )
    added = await client.conversations.items.create(
        conversation.id,
        items=[
            {"type": "message", "role": "assistant", "content": "reply"},
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "x"}]},
        ],
    )
    assert [item.type for item in added.data] == ["message", "message"]
    one = await client.conversations.items.retrieve(
        added.data[0].id, conversation_id=conversation.id
    )
    assert one.id == added.data[0].id
    after_delete = await client.conversations.items.delete(
        added.data[0].id, conversation_id=conversation.id
    )
    assert after_delete.id == conversation.id
    with pytest.raises(openai.NotFoundError):
        await client.conversations.items.retrieve(added.data[0].id, conversation_id=conversation.id)
    remaining = [item.id async for item in client.conversations.items.list(conversation.id)]
    assert len(remaining) == 2
    updated = await client.conversations.update(conversation.id, metadata={"b": "2"})
    assert updated.metadata == {"b": "2"}
    deleted = await client.conversations.delete(conversation.id)
    assert deleted.deleted is True
    with pytest.raises(openai.NotFoundError):
        await client.conversations.retrieve(conversation.id)


async def test_a_turn_sees_the_items_and_extends_them(client: AsyncOpenAI) -> None:
    conversation = await client.conversations.create(
        items=[{"type": "message", "role": "user", "content": "earlier"}]
    )
    response = await client.responses.create(
        model="echo", input="now", conversation={"id": conversation.id}
    )
    assert response.output_text == "echo: human:earlier|human:now"
    listed = await client.conversations.items.list(conversation.id, order="asc")
    assert [item.role for item in listed.data] == ["user", "user", "assistant"]  # type: ignore[union-attr]


async def test_bad_conversation_requests_are_400(client: AsyncOpenAI) -> None:
    conversation = await client.conversations.create()
    with pytest.raises(openai.BadRequestError) as hosted:
        await client.conversations.items.create(
            conversation.id,
            items=[{"type": "web_search_call", "id": "ws_1"}],  # type: ignore[list-item]
        )
    assert hosted.value.param == "items[0].type"
    with pytest.raises(openai.BadRequestError) as both:
        await client.responses.create(
            model="echo", input="x", conversation=conversation.id, previous_response_id="resp_1"
        )
    assert both.value.code == "mutually_exclusive_parameters"
    with pytest.raises(openai.BadRequestError) as empty:
        await client.conversations.items.create(conversation.id, items=[])
    assert empty.value.param == "items"
