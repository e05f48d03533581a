"""The approval graph: it pauses with a question, and acts only on the answer."""

from __future__ import annotations

import json

import openai
import pytest
from openai import AsyncOpenAI

from tests.support import questions

pytestmark = pytest.mark.anyio


async def answer(client: AsyncOpenAI, paused_id: str, call_id: str, text: str) -> str:
    response = await client.responses.create(
        model="approval",
        previous_response_id=paused_id,
        input=[{"type": "function_call_output", "call_id": call_id, "output": text}],
    )
    return response.output_text


async def test_pauses_with_one_question(client: AsyncOpenAI) -> None:
    paused = await client.responses.create(model="approval", input="restart the billing job")
    assert paused.status == "completed"  # a pause completes, with the question as a call
    [question] = questions(paused)
    arguments = json.loads(question.arguments)
    assert arguments["question"] == "Go ahead with 'restart the billing job'?"
    assert arguments["choices"] == ["approve", "reject"]


@pytest.mark.parametrize(
    ("reply", "expected"),
    [
        ("approve", "Done: restart the billing job."),
        ("reject", "Not done: 'restart the billing job' was rejected."),
        ("only after 6 pm", "Not done; your comment was noted: only after 6 pm"),
    ],
)
async def test_acts_on_the_answer(client: AsyncOpenAI, reply: str, expected: str) -> None:
    paused = await client.responses.create(model="approval", input="restart the billing job")
    [question] = questions(paused)
    assert await answer(client, paused.id, question.call_id, reply) == expected


async def test_an_answer_counts_once(client: AsyncOpenAI) -> None:
    paused = await client.responses.create(model="approval", input="rotate the keys")
    [question] = questions(paused)
    assert await answer(client, paused.id, question.call_id, "approve") == "Done: rotate the keys."
    with pytest.raises(openai.ConflictError):
        await answer(client, paused.id, question.call_id, "approve")
