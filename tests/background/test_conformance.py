"""One engine conformance suite: what a client of background Responses may rely on, whichever
engine runs them. Parametrized over the in-memory engine, DBOS (API and worker processes on
PostgreSQL) and Hatchet (only with HATCHET_CLIENT_TOKEN; reported as skipped otherwise).
Everything goes through the official SDK in strict mode."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import openai
import pytest
from openai.types.responses import Response

from tests.background.conftest import Deployment

pytestmark = [pytest.mark.anyio, pytest.mark.postgres, pytest.mark.processes]

DEADLINE_SECONDS = 60.0
NO_DELAY = {"lgos_settings": '{"delay_seconds": 0}'}
T = TypeVar("T")


async def eventually(check: Callable[[], Awaitable[T | None]], what: str) -> T:
    """Poll `check` until it returns something truthy (a condition, never a timing)."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while True:
        result = await check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def finished(deployment: Deployment, response_id: str, api: int = 0) -> Response:
    client = deployment.client(api)

    async def terminal() -> Response | None:
        response = await client.responses.retrieve(response_id)
        return None if response.status in ("queued", "in_progress") else response

    return await eventually(terminal, f"{response_id} to finish")


async def step_seen(deployment: Deployment, topic: str, step: str, event: str) -> int:
    async def seen() -> int | None:
        for row_step, row_event, pid in await deployment.steps(topic):
            if (row_step, row_event) == (step, event):
                return pid
        return None

    return await eventually(seen, f"{topic}: {step} {event}")


def topic() -> str:
    return f"topic-{uuid.uuid4().hex[:12]}"


async def test_create_returns_queued_then_completes(deployment: Deployment) -> None:
    client = deployment.client()
    accepted = await client.responses.create(
        model="background-mock", input="Quarterly risks", background=True, metadata=NO_DELAY
    )
    assert accepted.status == "queued"
    assert accepted.background is True
    assert accepted.output == []
    done = await finished(deployment, accepted.id)
    assert done.id == accepted.id
    assert done.status == "completed"
    assert done.output_text == "Background report for: Quarterly risks"
    assert done.metadata == NO_DELAY


async def test_cancel_queued(deployment: Deployment) -> None:
    client = deployment.client()
    blockers: list[str] = []
    held = topic()
    # Fill every worker slot, so the next run waits in the queue.
    for _ in range(deployment.slots):
        blocker = await client.responses.create(model="gated-steps", input=held, background=True)
        blockers.append(blocker.id)
    if blockers:
        await eventually(
            lambda: _count(deployment, held, "step_2", "started", deployment.slots),
            "every slot to be busy",
        )
    never = topic()
    waiting = await client.responses.create(model="gated-steps", input=never, background=True)
    if deployment.slots:
        assert (await client.responses.retrieve(waiting.id)).status == "queued"
    cancelled = await client.responses.cancel(waiting.id)
    assert cancelled.status == "cancelled"
    assert cancelled.id == waiting.id
    await deployment.open_gate(held)
    for blocker_id in blockers:
        assert (await finished(deployment, blocker_id)).status == "completed"
    await deployment.open_gate(never)
    again = await client.responses.retrieve(waiting.id)
    assert again.status == "cancelled"
    assert again.output == []
    if deployment.slots:  # it never started
        assert await deployment.steps(never) == []


async def _count(deployment: Deployment, topic: str, step: str, event: str, n: int) -> bool:
    rows = await deployment.steps(topic)
    return sum(1 for row in rows if row[:2] == (step, event)) >= n


async def test_cancel_running_stops_the_graph(deployment: Deployment) -> None:
    client = deployment.client()
    name = topic()
    accepted = await client.responses.create(model="gated-steps", input=name, background=True)
    await step_seen(deployment, name, "step_2", "started")
    assert (await client.responses.retrieve(accepted.id)).status == "in_progress"
    cancelled = await client.responses.cancel(accepted.id)
    assert cancelled.status == "cancelled"
    # The graph itself was interrupted (CancelledError in the node), not just relabelled.
    await step_seen(deployment, name, "step_2", "cancelled")
    await deployment.open_gate(name)
    assert (await client.responses.retrieve(accepted.id)).status == "cancelled"
    assert ("step_3", "started") not in [row[:2] for row in await deployment.steps(name)]


async def test_cancel_finished_returns_it_unchanged(deployment: Deployment) -> None:
    client = deployment.client()
    accepted = await client.responses.create(
        model="background-mock", input="Done already", background=True, metadata=NO_DELAY
    )
    done = await finished(deployment, accepted.id)
    after_cancel = await client.responses.cancel(accepted.id)
    assert after_cancel.model_dump() == done.model_dump()
    assert (await client.responses.retrieve(accepted.id)).model_dump() == done.model_dump()


async def test_idempotent_create_under_concurrency(deployment: Deployment) -> None:
    key = str(uuid.uuid4())
    name = topic()
    api_count = len(deployment.apis)

    async def create(index: int) -> Response:
        return await deployment.client(index % api_count).responses.create(
            model="gated-steps",
            input=name,
            background=True,
            extra_headers={"Idempotency-Key": key},
        )

    created = await asyncio.gather(*(create(index) for index in range(8)))
    assert len({response.id for response in created}) == 1
    await deployment.open_gate(name)
    done = await finished(deployment, created[0].id)
    assert done.status == "completed"
    # A retry after completion still names the same Response, and nothing ran twice.
    retried = await create(1)
    assert retried.id == done.id
    assert retried.status == "completed"
    steps = await deployment.steps(name)
    assert [row[:2] for row in steps if row[1] == "finished"] == [
        ("step_1", "finished"),
        ("step_2", "finished"),
        ("step_3", "finished"),
    ]


async def test_idempotency_key_in_litellm_extra_headers(deployment: Deployment) -> None:
    key = str(uuid.uuid4())
    client = deployment.client()
    body: dict[str, Any] = {"extra_headers": {"Idempotency-Key": key}}
    first = await client.responses.create(
        model="background-mock",
        input="via body",
        background=True,
        metadata=NO_DELAY,
        extra_body=body,
    )
    second = await client.responses.create(
        model="background-mock",
        input="via body",
        background=True,
        metadata=NO_DELAY,
        extra_headers={"X-Idempotency-Key": key},
    )
    assert first.id == second.id


async def test_key_reused_with_another_body_is_422(deployment: Deployment) -> None:
    key = str(uuid.uuid4())
    client = deployment.client()
    first = await client.responses.create(
        model="background-mock",
        input="first body",
        background=True,
        metadata=NO_DELAY,
        extra_headers={"Idempotency-Key": key},
    )
    with pytest.raises(openai.UnprocessableEntityError) as caught:
        await client.responses.create(
            model="background-mock",
            input="another body",
            background=True,
            metadata=NO_DELAY,
            extra_headers={"Idempotency-Key": key},
        )
    assert caught.value.code == "idempotency_key_reused"
    assert (await finished(deployment, first.id)).output_text.endswith("first body")


async def test_failed_graph_is_failed_without_internals(deployment: Deployment) -> None:
    client = deployment.client()
    accepted = await client.responses.create(model="failing", input="boom", background=True)
    done = await finished(deployment, accepted.id)
    assert done.status == "failed"
    assert done.error is not None
    assert "secret internal detail" not in done.error.message


async def test_unknown_id_is_a_prompt_404(deployment: Deployment) -> None:
    client = deployment.client()
    for unknown in (f"resp_{uuid.uuid4().hex}{uuid.uuid4().hex}", "resp_not-ours"):
        with pytest.raises(openai.NotFoundError):
            await client.responses.retrieve(unknown)
        with pytest.raises(openai.NotFoundError):
            await client.responses.cancel(unknown)


async def test_background_interrupt_round_trip(deployment: Deployment) -> None:
    client = deployment.client()
    accepted = await client.responses.create(
        model="background-interrupt", input="Quarterly risks", background=True, metadata=NO_DELAY
    )
    paused = await finished(deployment, accepted.id)
    assert paused.status == "completed"
    reviews = [
        item
        for item in paused.output
        if item.type == "function_call" and item.name == "lgos_interrupt"
    ]
    assert len(reviews) == 1
    assert "Background report for: Quarterly risks" in reviews[0].arguments
    answer = await client.responses.create(
        model="background-interrupt",
        previous_response_id=paused.id,
        input=[
            {"type": "function_call_output", "call_id": review.call_id, "output": "approve"}
            for review in reviews
        ],
        background=True,
        metadata=NO_DELAY,
    )
    assert answer.status == "queued"
    assert answer.id != paused.id
    completed = await finished(deployment, answer.id)
    assert completed.status == "completed"
    assert completed.output_text == "Background report for: Quarterly risks"
    # The pause stays answered once: a second answer to it fails its own Response.
    stale = await client.responses.create(
        model="background-interrupt",
        previous_response_id=paused.id,
        input=[
            {"type": "function_call_output", "call_id": review.call_id, "output": "approve"}
            for review in reviews
        ],
        background=True,
        metadata=NO_DELAY,
    )
    failed = await finished(deployment, stale.id)
    assert failed.status == "failed"
    assert failed.error is not None
    assert failed.error.code is not None
    # Polling the paused Response again still shows the original review call.
    again = await client.responses.retrieve(paused.id)
    assert again.model_dump() == paused.model_dump()


async def test_background_needs_the_feature(deployment: Deployment) -> None:
    client = deployment.client()
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(model="foreground-only", input="x", background=True)
    assert caught.value.param == "background"


async def test_background_streaming_is_rejected_clearly(deployment: Deployment) -> None:
    client = deployment.client()
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(
            model="background-mock", input="x", background=True, stream=True, metadata=NO_DELAY
        )
    assert caught.value.param == "stream"
