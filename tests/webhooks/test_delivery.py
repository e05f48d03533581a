"""Completion webhooks of background Responses, end to end: real `lgos serve` (and `lgos
worker`) processes on each engine, and a real receiver process that records what it gets."""

from __future__ import annotations

import asyncio
import json
import signal
from collections import Counter
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI

from tests.background.conftest import Deployment
from tests.background.test_conformance import NO_DELAY, finished, step_seen, topic
from tests.webhooks.conftest import WRONG_SECRET, Hooked, is_attempt, unwrap

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.postgres,
    pytest.mark.processes,
    pytest.mark.slow,
    pytest.mark.timeout(600, func_only=True),
]
DURABLE_ENGINES = ["dbos", "hatchet"]
ENGINES = ["memory", *DURABLE_ENGINES]


def api_and_workers(deployment: Deployment) -> list[Any]:
    return [*deployment.apis, *deployment.workers.values()]


def wait_for_record(deployment: Deployment, match: Any, count: int = 1) -> None:
    """Wait until the API or a worker (whichever delivers on this engine) logged `match`."""
    processes = api_and_workers(deployment)
    processes[0].wait_for(
        lambda: sum(1 for p in processes for r in p.records() if match(r)) >= count,
        120,
        "a webhook log record",
    )


def delivered(response_ids: set[str]) -> Any:
    """A delivery of one of these Responses' events ended with a 2xx (the deployment is shared
    by the package's tests: each counts only its own)."""
    return lambda r: (
        r.get("message") == "webhook.delivered" and r.get("response_id") in response_ids
    )


async def cancelled_run(deployment: Deployment, client: AsyncOpenAI) -> str:
    name = topic()
    accepted = await client.responses.create(model="gated-steps", input=name, background=True)
    await step_seen(deployment, name, "step_2", "started")
    await client.responses.cancel(accepted.id)
    return accepted.id


async def completed_while_the_receiver_is_down(deployment: Deployment, attempts: int) -> str:
    """A run that completes (its webhook does not hold it up) while its first `attempts`
    deliveries fail: nothing listens on the receiver's port yet. Its Response id."""
    created = await deployment.sdk().responses.create(
        model="background-mock", input="report", background=True, metadata=NO_DELAY
    )
    assert (await finished(deployment, created.id)).status == "completed"
    wait_for_record(deployment, is_attempt(created.id, failed=True), attempts)
    return created.id


@pytest.mark.parametrize("engine", ENGINES)
async def test_each_end_is_one_verified_event(hooked: Hooked) -> None:
    deployment, receiver = hooked.deployment, hooked.receiver
    receiver.start()
    client = deployment.sdk()
    completed = await client.responses.create(
        model="background-mock", input="report", background=True, metadata=NO_DELAY
    )
    failed = await client.responses.create(model="failing", input="x", background=True)
    paused = await client.responses.create(
        model="background-interrupt", input="report", background=True, metadata=NO_DELAY
    )
    cancelled = await cancelled_run(deployment, client)
    expected = {
        completed.id: ["response.completed"],
        failed.id: ["response.failed"],
        cancelled: ["response.cancelled"],
        # A pause completes the Response; the LGOS extension event says it waits.
        paused.id: ["lgos.response.paused", "response.completed"],
    }
    for response_id, types in expected.items():
        requests = receiver.wait_for(response_id, len(types))
        events = [unwrap(request) for request in requests]
        assert sorted(event.type for event in events) == types
        for event, request in zip(events, requests, strict=True):
            assert event.data.id == response_id
            assert event.object == "event"
            assert event.id == request["headers"]["webhook-id"]
        with pytest.raises(openai.InvalidWebhookSignatureError):
            unwrap(requests[0], WRONG_SECRET)
        # Each event was delivered once: its delivery ended with that attempt.
        ids = [request["headers"]["webhook-id"] for request in requests]
        assert len(set(ids)) == len(ids)
    assert (await finished(deployment, completed.id)).status == "completed"
    wait_for_record(deployment, delivered(set(expected)), 5)
    assert len(receiver.received()) == 5


@pytest.mark.parametrize("engine", ENGINES)
async def test_receiver_down_gets_the_event_when_back(hooked: Hooked) -> None:
    deployment, receiver = hooked.deployment, hooked.receiver
    response_id = await completed_while_the_receiver_is_down(deployment, attempts=3)
    receiver.start()
    [request] = receiver.wait_for(response_id)
    event = unwrap(request)
    assert event.type == "response.completed"
    # Every attempt carried the same webhook-id: the one the receiver finally got. (The last
    # attempt is logged once the receiver has answered it.)
    wait_for_record(deployment, is_attempt(response_id, failed=False))
    attempts = [
        r
        for p in api_and_workers(deployment)
        for r in p.records()
        if r.get("message") == "webhook.attempt" and r.get("response_id") == response_id
    ]
    assert len(attempts) >= 4
    assert {r["webhook_id"] for r in attempts} == {request["headers"]["webhook-id"]}
    assert request["headers"]["webhook-id"] == event.id


@pytest.mark.parametrize("engine", ENGINES)
async def test_burst_of_runs_one_event_each(hooked: Hooked) -> None:
    deployment, receiver = hooked.deployment, hooked.receiver
    receiver.start()
    # A burst may find the database pool busy (503 with Retry-After): the SDK retries, and
    # the Idempotency-Key keeps a retried create one run.
    client = deployment.sdk().with_options(max_retries=8)
    created = await asyncio.gather(
        *(
            client.responses.create(
                model="background-mock",
                input=f"r{n}",
                background=True,
                metadata=NO_DELAY,
                extra_headers={"Idempotency-Key": f"burst-{n}-{topic()}"},
            )
            for n in range(100)
        )
    )
    ids = {response.id for response in created}
    wait_for_record(deployment, delivered(ids), 100)
    received = receiver.wait_for_each(ids)
    webhook_ids = Counter(request["headers"]["webhook-id"] for request in received)
    assert len(webhook_ids) == 100
    assert max(webhook_ids.values()) == 1
    assert {json.loads(request["body"])["data"]["id"] for request in received} == ids


@pytest.mark.parametrize("engine", DURABLE_ENGINES)
async def test_killed_api_and_worker_deliver_once_the_worker_is_back(hooked: Hooked) -> None:
    deployment, receiver = hooked.deployment, hooked.receiver
    # The run has finished and its delivery has begun (and failed: no receiver yet).
    response_id = await completed_while_the_receiver_is_down(deployment, attempts=1)
    first = next(
        r
        for p in api_and_workers(deployment)
        for r in p.records()
        if is_attempt(response_id, failed=True)(r)
    )
    for process in api_and_workers(deployment):
        process.process.send_signal(signal.SIGKILL)
        process.process.wait()
    receiver.start()
    deployment.ensure_workers()  # the same worker id: it recovers its own workflows
    [request] = receiver.wait_for(response_id)
    assert unwrap(request).type == "response.completed"
    assert request["headers"]["webhook-id"] == first["webhook_id"]
    [worker] = deployment.workers.values()
    worker.wait_for_record(lambda r: r.get("message") == "webhook.delivered")
    assert len(receiver.for_response(response_id)) == 1
