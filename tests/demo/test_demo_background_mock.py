"""background-mock: a queued Response, polled to its report; cancellable while it works."""

from __future__ import annotations

import anyio
import pytest
from openai import AsyncOpenAI

from tests.demo.support import poll, settings

pytestmark = pytest.mark.anyio

MODEL = "background-mock"


async def test_background_report_is_polled_to_completion(client: AsyncOpenAI) -> None:
    created = await client.responses.create(
        model=MODEL, input="Quarterly risks", background=True, metadata=settings(delay_seconds=0)
    )
    assert created.status in {"queued", "in_progress"}
    done = await poll(client, created)
    assert done.status == "completed"
    assert done.id == created.id
    assert done.output_text == "Background report for: Quarterly risks"


async def test_cancelling_while_it_works(client: AsyncOpenAI) -> None:
    created = await client.responses.create(
        model=MODEL, input="Long job", background=True, metadata=settings(delay_seconds=300)
    )
    with anyio.fail_after(10):
        # Polling is how a client learns the run started; there is no event to await.
        while (await client.responses.retrieve(created.id)).status != "in_progress":  # noqa: ASYNC110
            await anyio.sleep(0.01)
    cancelled = await client.responses.cancel(created.id)
    assert cancelled.status == "cancelled"
    assert (await client.responses.retrieve(created.id)).status == "cancelled"


async def test_cancelling_before_it_starts(client: AsyncOpenAI) -> None:
    created = await client.responses.create(
        model=MODEL, input="Never mind", background=True, metadata=settings(delay_seconds=300)
    )
    cancelled = await client.responses.cancel(created.id)
    assert cancelled.status == "cancelled"
    assert cancelled.output == []


async def test_cancelling_a_finished_response_changes_nothing(client: AsyncOpenAI) -> None:
    done = await poll(
        client,
        await client.responses.create(
            model=MODEL, input="Done", background=True, metadata=settings(delay_seconds=0)
        ),
    )
    again = await client.responses.cancel(done.id)
    assert again.status == "completed"
    assert again.output_text == "Background report for: Done"
