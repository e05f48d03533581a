"""background-interrupt: prepare in the background, review, finish in a second background run."""

from __future__ import annotations

import json
from typing import Any

import pytest
from openai import AsyncOpenAI, BadRequestError

from tests.demo.support import poll, review_calls, settings

pytestmark = pytest.mark.anyio

MODEL = "background-interrupt"
FAST = settings(delay_seconds=0)


async def _review(client: AsyncOpenAI, answer: str) -> tuple[str, str, str]:
    pending = await poll(
        client,
        await client.responses.create(
            model=MODEL, input="Quarterly risks", background=True, metadata=FAST
        ),
    )
    assert pending.status == "completed"
    (call,) = review_calls(pending)
    report = json.loads(call.arguments)["report"]
    finished = await poll(
        client,
        await client.responses.create(
            model=MODEL,
            previous_response_id=pending.id,
            input=[{"type": "function_call_output", "call_id": call.call_id, "output": answer}],
            background=True,
            metadata=FAST,
        ),
    )
    assert finished.status == "completed"
    assert finished.id != pending.id
    # Polling the first Response still shows the original review call.
    again = await client.responses.retrieve(pending.id)
    assert [c.call_id for c in review_calls(again)] == [call.call_id]
    return report, finished.output_text, pending.id


async def test_approved_report_is_finished(client: AsyncOpenAI) -> None:
    report, answer, _ = await _review(client, "approve")
    assert report == "Background report for: Quarterly risks"
    assert answer == "Background report for: Quarterly risks"


async def test_rejected_report_is_not_finished(client: AsyncOpenAI) -> None:
    _, answer, _ = await _review(client, " REJECT ")
    assert answer == "The report on 'Quarterly risks' was rejected."


async def test_a_typo_is_refused_and_the_review_stays_answerable(client: AsyncOpenAI) -> None:
    pending = await poll(
        client,
        await client.responses.create(
            model=MODEL, input="Quarterly risks", background=True, metadata=FAST
        ),
    )
    (call,) = review_calls(pending)

    def answering(output: str) -> dict[str, Any]:
        return {
            "model": MODEL,
            "previous_response_id": pending.id,
            "input": [{"type": "function_call_output", "call_id": call.call_id, "output": output}],
            "metadata": FAST,
        }

    with pytest.raises(BadRequestError) as raised:
        await client.responses.create(**answering("maybe"))
    assert raised.value.param == "input[0].output"
    assert "Answer 'approve' or 'reject', not 'maybe'." in raised.value.message
    refused = await poll(
        client, await client.responses.create(**answering("maybe"), background=True)
    )
    assert refused.status == "failed"
    assert refused.error is not None
    assert refused.error.message == "Answer 'approve' or 'reject', not 'maybe'."
    finished = await poll(
        client, await client.responses.create(**answering("approve"), background=True)
    )
    assert finished.output_text == "Background report for: Quarterly risks"
