"""interruptible-approval: the graph asks a person before it acts."""

from __future__ import annotations

import json

import pytest
from openai import AsyncOpenAI

from tests.demo.support import review_calls

pytestmark = pytest.mark.anyio

MODEL = "interruptible-approval"


async def _ask(client: AsyncOpenAI, topic: str, answer: str) -> tuple[dict[str, object], str]:
    paused = await client.responses.create(model=MODEL, input=topic)
    assert paused.status == "completed"
    (call,) = review_calls(paused)
    question = json.loads(call.arguments)
    done = await client.responses.create(
        model=MODEL,
        previous_response_id=paused.id,
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": answer}],
    )
    assert done.status == "completed"
    assert review_calls(done) == []
    return question, done.output_text


async def test_approval_publishes(client: AsyncOpenAI) -> None:
    question, answer = await _ask(client, "the spring newsletter", "approve")
    assert question["question"] == "Approve publishing 'the spring newsletter'?"
    assert question["choices"] == ["approve", "reject"]
    assert answer == "Published 'the spring newsletter'."


async def test_rejection_does_not_publish(client: AsyncOpenAI) -> None:
    _, answer = await _ask(client, "the draft", "Reject")
    assert answer == "Rejected: 'the draft' was not published."


async def test_free_text_is_noted_as_feedback(client: AsyncOpenAI) -> None:
    _, answer = await _ask(client, "the memo", "Shorten the second paragraph")
    assert answer == "Not published; your feedback was noted: Shorten the second paragraph"
