"""status-events: progress arrives as commentary, apart from the answer."""

from __future__ import annotations

import pytest
from openai import AsyncOpenAI

pytestmark = pytest.mark.anyio


async def test_progress_is_commentary_and_the_answer_stays_clean(client: AsyncOpenAI) -> None:
    stream = await client.responses.create(
        model="status-events", input="the harbour tides", stream=True
    )
    progress: list[str] = []
    commentary_items: set[str] = set()
    answer_deltas: list[str] = []
    completed = None
    async for event in stream:
        if event.type == "response.output_item.added" and event.item.type == "message":
            if event.item.phase == "commentary":
                commentary_items.add(event.item.id)
        elif event.type == "response.output_item.done" and event.item.type == "message":
            if event.item.phase == "commentary":
                progress += [part.text for part in event.item.content if part.type == "output_text"]
        elif event.type == "response.output_text.delta" and event.item_id not in commentary_items:
            answer_deltas.append(event.delta)
        elif event.type == "response.completed":
            completed = event.response
    assert progress == ["Reading the question", "Looking things up"]
    assert completed is not None
    (answer,) = [
        item for item in completed.output if item.type == "message" and item.phase != "commentary"
    ]
    assert answer.content[0].type == "output_text"
    assert answer.content[0].text == "Done looking into 'the harbour tides'."
    assert "".join(answer_deltas) == "Done looking into 'the harbour tides'."


async def test_non_streaming_clients_get_only_the_answer(client: AsyncOpenAI) -> None:
    response = await client.responses.create(model="status-events", input="tides")
    assert response.output_text == "Done looking into 'tides'."
