"""Background Responses on the in-process engine: queued, polled, finished."""

from __future__ import annotations

import pytest
from openai import AsyncOpenAI

from tests.support import questions, until_finished

pytestmark = pytest.mark.anyio


async def test_chat_in_the_background(client: AsyncOpenAI) -> None:
    queued = await client.responses.create(model="chat", input="Take your time", background=True)
    assert queued.status in ("queued", "in_progress")
    done = await until_finished(client, queued)
    assert done.status == "completed"
    assert done.output_text == "Happy to help! You said: Take your time"


async def test_approval_pauses_and_resumes_in_the_background(client: AsyncOpenAI) -> None:
    queued = await client.responses.create(
        model="approval", input="archive last year's logs", background=True
    )
    paused = await until_finished(client, queued)
    [question] = questions(paused)
    resumed = await client.responses.create(
        model="approval",
        previous_response_id=paused.id,
        input=[{"type": "function_call_output", "call_id": question.call_id, "output": "approve"}],
        background=True,
    )
    done = await until_finished(client, resumed)
    assert done.output_text == "Done: archive last year's logs."
