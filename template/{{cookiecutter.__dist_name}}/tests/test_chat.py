"""The chat graph through the OpenAI SDK: answers, streams, honours its client setting."""

from __future__ import annotations

import json

import openai
import pytest
from openai import AsyncOpenAI

pytestmark = pytest.mark.anyio


async def test_models_lists_both_graphs(client: AsyncOpenAI) -> None:
    models = [model.id async for model in client.models.list()]
    assert sorted(models) == ["approval", "chat"]


async def test_answers_with_the_default_tone(client: AsyncOpenAI) -> None:
    response = await client.responses.create(model="chat", input="What is LGOS?")
    assert response.status == "completed"
    assert response.output_text == "Happy to help! You said: What is LGOS?"


async def test_tone_is_a_per_request_setting(client: AsyncOpenAI) -> None:
    response = await client.responses.create(
        model="chat",
        input="What is LGOS?",
        metadata={"lgos_settings": json.dumps({"tone": "formal"})},
    )
    assert response.output_text == "Certainly. You said: What is LGOS?"


async def test_an_unknown_tone_is_refused(client: AsyncOpenAI) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        await client.responses.create(
            model="chat",
            input="Hi",
            metadata={"lgos_settings": json.dumps({"tone": "sarcastic"})},
        )
    assert raised.value.param == "metadata.lgos_settings"


async def test_streams_word_by_word(client: AsyncOpenAI) -> None:
    deltas: list[str] = []
    async with client.responses.stream(model="chat", input="Stream this, please") as stream:
        async for event in stream:
            if event.type == "response.output_text.delta":
                deltas.append(event.delta)
        final = await stream.get_final_response()
    assert len(deltas) > 1
    assert "".join(deltas) == final.output_text == "Happy to help! You said: Stream this, please"


async def test_chat_completions_too(client: AsyncOpenAI) -> None:
    completion = await client.chat.completions.create(
        model="chat", messages=[{"role": "user", "content": "Hello"}]
    )
    assert completion.choices[0].message.content == "Happy to help! You said: Hello"
