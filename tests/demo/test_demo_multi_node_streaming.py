"""multi-node-streaming: three nodes stream their parts in order, then one answer."""

from __future__ import annotations

import pytest
from openai import AsyncOpenAI

pytestmark = pytest.mark.anyio

ANSWER = "First part. Second part. Third part. "


async def test_parts_stream_in_node_order_and_match_the_answer(client: AsyncOpenAI) -> None:
    stream = await client.responses.create(
        model="multi-node-streaming", input="Tell me in three parts", stream=True
    )
    deltas: list[str] = []
    final_text = None
    async for event in stream:
        if event.type == "response.output_text.delta":
            deltas.append(event.delta)
        elif event.type == "response.completed":
            final_text = event.response.output_text
    streamed = "".join(deltas)
    assert streamed == ANSWER
    assert final_text == ANSWER
    assert streamed.index("First") < streamed.index("Second") < streamed.index("Third")


async def test_non_streaming_answer_is_the_same(client: AsyncOpenAI) -> None:
    response = await client.responses.create(model="multi-node-streaming", input="Again")
    assert response.output_text == ANSWER
