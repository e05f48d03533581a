"""simple-graph: one answer, streamed word by word, its tone set per request."""

from __future__ import annotations

import openai
import pytest
from openai import AsyncOpenAI

from tests.demo.support import settings

pytestmark = pytest.mark.anyio


async def test_answers_in_the_requested_tone(client: AsyncOpenAI) -> None:
    response = await client.responses.create(
        model="simple-graph",
        input="What is a tide?",
        metadata=settings(audience="expert", enthusiastic=True),
    )
    assert response.status == "completed"
    assert response.output_text == "In precise terms: you said 'What is a tide?'!"


async def test_chat_completions_stream_word_by_word(client: AsyncOpenAI) -> None:
    stream = await client.chat.completions.create(
        model="simple-graph",
        messages=[{"role": "user", "content": "Hello there"}],
        stream=True,
    )
    pieces = [
        chunk.choices[0].delta.content
        async for chunk in stream
        if chunk.choices and chunk.choices[0].delta.content
    ]
    expected = "Here is a short answer: you said 'Hello there'."
    assert "".join(pieces) == expected
    assert len(pieces) == len(expected.split(" "))


async def test_an_unknown_setting_is_refused(client: AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(
            model="simple-graph", input="hi", metadata=settings(audience="pirate")
        )
    assert caught.value.body["param"] == "metadata.lgos_settings"  # type: ignore[index]
