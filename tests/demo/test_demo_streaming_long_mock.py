"""streaming-long-mock: a long stream whose length and pace are settings; a client may stop it."""

from __future__ import annotations

import pytest
from openai import AsyncOpenAI, BadRequestError

from tests.demo.support import settings

pytestmark = pytest.mark.anyio


async def test_streams_the_requested_number_of_words(client: AsyncOpenAI) -> None:
    stream = await client.responses.create(
        model="streaming-long-mock",
        input="go",
        stream=True,
        metadata=settings(words=40, delay_ms=0),
    )
    deltas = [event.delta async for event in stream if event.type == "response.output_text.delta"]
    assert "".join(deltas) == " ".join(f"word{index}" for index in range(40))
    assert len(deltas) == 40


async def test_a_client_can_stop_reading_midway(client: AsyncOpenAI) -> None:
    stream = await client.responses.create(
        model="streaming-long-mock",
        input="go",
        stream=True,
        metadata=settings(words=500, delay_ms=0),
    )
    seen: list[str] = []
    async for event in stream:
        if event.type == "response.output_text.delta":
            seen.append(event.delta)
            if len(seen) == 5:
                break
    await stream.close()
    assert "".join(seen) == "word0 word1 word2 word3 word4 "
    # The server is still healthy for the next request.
    response = await client.responses.create(
        model="streaming-long-mock", input="again", metadata=settings(words=3, delay_ms=0)
    )
    assert response.output_text == "word0 word1 word2"


@pytest.mark.parametrize("values", [{"words": 5001}, {"words": 0}, {"delay_ms": 1001}])
async def test_settings_are_bounded(client: AsyncOpenAI, values: dict[str, int]) -> None:
    # One request must not be able to ask for minutes of CPU or gigabytes of text.
    with pytest.raises(BadRequestError) as raised:
        await client.responses.create(
            model="streaming-long-mock", input="go", metadata=settings(**values)
        )
    assert raised.value.status_code == 400
    assert raised.value.param == "metadata.lgos_settings"  # type: ignore[attr-defined]
