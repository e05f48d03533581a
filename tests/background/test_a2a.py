"""A2A tasks of background graphs on DBOS and on Hatchet, across real processes: the task is
a background Response of the engine, so the other API process (or a restarted one) answers for
it, resubscribing replays the durable event log without a gap or a repeat, and cancelling stops
the worker's run.

The client is the official `a2a-sdk`; the agent is `tests.background.registry`'s `long-steps`."""

from __future__ import annotations

from contextlib import AbstractAsyncContextManager
from typing import Any

import pytest
from a2a.client import Client
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import A2AError

from tests.background.conftest import Deployment, spawn
from tests.background.test_conformance import step_seen, topic
from tests.support.a2a import a2a_client, user_message
from tests.support.processes import START_TIMEOUT

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.postgres,
    pytest.mark.processes,
    pytest.mark.timeout(600, func_only=True),
]


def agent(deployment: Deployment, api: int, model: str) -> AbstractAsyncContextManager[Client]:
    url = f"{deployment.apis[api].base_url}/a2a/{model}"
    return a2a_client(url, streaming=True, http_timeout=120)


def chunks(events: list[StreamResponse]) -> str:
    return "".join(
        part.text
        for event in events
        if event.HasField("artifact_update") and not event.artifact_update.last_chunk
        for part in event.artifact_update.artifact.parts
    )


async def test_a_task_resubscribed_on_the_other_api_loses_and_repeats_nothing(
    workers: Deployment,
) -> None:
    name = topic()
    async with agent(workers, 0, "long-steps") as first:
        stream = first.send_message(user_message(name))
        before: list[StreamResponse] = []
        async for event in stream:
            before.append(event)
            if event.HasField("status_update"):
                break  # working: the client goes away
        await stream.aclose()  # type: ignore[attr-defined]
    task_id = before[0].task.id
    assert task_id.startswith("resp_")
    await step_seen(workers, name, "step_2", "started")
    async with agent(workers, 1, "long-steps") as second:
        resubscribed = second.subscribe(SubscribeToTaskRequest(id=task_id))
        snapshot = await anext(resubscribed)
        await workers.open_gate(name)
        after = [event async for event in resubscribed]
        fetched = await second.get_task(GetTaskRequest(id=task_id))
    assert snapshot.task.id == task_id
    assert snapshot.task.status.state == TaskState.TASK_STATE_WORKING
    assert not snapshot.task.artifacts  # nothing was written before the disconnect
    answer = f"Steps done for {name}: step_1, step_2, step_3"
    # Every chunk after the snapshot, once: together they are the answer.
    assert chunks(after) == answer
    assert after[-2].artifact_update.last_chunk
    assert after[-2].artifact_update.artifact.parts[0].text == answer
    assert after[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    assert [s.status_update.status.state for s in after if s.HasField("status_update")] == [
        TaskState.TASK_STATE_COMPLETED
    ]
    assert fetched.status.state == TaskState.TASK_STATE_COMPLETED
    assert fetched.artifacts[0].parts[0].text == answer
    assert fetched.context_id == before[0].task.context_id


async def test_cancelling_the_task_cancels_the_workers_run(workers: Deployment) -> None:
    name = topic()
    async with agent(workers, 0, "long-steps") as client:
        stream = client.send_message(user_message(name))
        created = await anext(stream)
        await stream.aclose()  # type: ignore[attr-defined]
        await step_seen(workers, name, "step_2", "started")
    async with agent(workers, 1, "long-steps") as other:
        cancelled = await other.cancel_task(CancelTaskRequest(id=created.task.id))
        fetched = await other.get_task(GetTaskRequest(id=created.task.id))
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert fetched.status.state == TaskState.TASK_STATE_CANCELED
    await step_seen(workers, name, "step_2", "cancelled")


async def test_a_task_outlives_the_api_that_created_it(workers: Deployment) -> None:
    """The API process is stopped mid-task and started again: the new process answers for the
    task, and the task completes."""
    name = topic()
    async with agent(workers, 0, "long-steps") as client:
        stream = client.send_message(user_message(name))
        created = await anext(stream)
        await stream.aclose()  # type: ignore[attr-defined]
    await step_seen(workers, name, "step_2", "started")
    workers.apis[0].stop()
    workers.apis[0] = spawn("serve", workers.env, "--port", "0")
    workers.apis[0].wait_until_serving(timeout=START_TIMEOUT)
    async with agent(workers, 0, "long-steps") as restarted:
        resubscribed = restarted.subscribe(SubscribeToTaskRequest(id=created.task.id))
        snapshot = await anext(resubscribed)
        await workers.open_gate(name)
        after = [event async for event in resubscribed]
    assert snapshot.task.status.state == TaskState.TASK_STATE_WORKING
    assert chunks(after) == f"Steps done for {name}: step_1, step_2, step_3"
    assert after[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED


def reply(text: str, task: Task, settings: dict[str, Any] | None = None) -> SendMessageRequest:
    return user_message(text, task=task, settings=settings)


def started(text: str) -> SendMessageRequest:
    return user_message(text, settings={"delay_seconds": 0})


async def sent(client: Client, request: SendMessageRequest) -> Task:
    """The task once the message's stream ends (the task ended, or it waits for input)."""
    task_id = request.message.task_id
    async for event in client.send_message(request):
        task_id = task_id or event.task.id
    return await client.get_task(GetTaskRequest(id=task_id))


def asked(task: Task) -> str:
    return task.status.message.parts[0].text


async def test_a_paused_task_is_answered_after_a_restart_and_refusals_ask_again(
    workers: Deployment,
) -> None:
    """long-review pauses on the engine: the task is input-required with the question; the API
    that created it is restarted; the other API and the new one answer for the task; a refused
    answer asks again, saying why; 'approve' resumes the same checkpoint to the report."""
    async with agent(workers, 0, "long-review") as first:
        events = [event async for event in first.send_message(started("Quarterly risks"))]
    task_id = events[0].task.id
    assert task_id.startswith("resp_")
    assert events[-1].status_update.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    question = events[-1].status_update.status.message.parts[0].text
    assert "Background report for: Quarterly risks" in question
    workers.apis[0].stop()
    workers.apis[0] = spawn("serve", workers.env, "--port", "0")
    async with agent(workers, 1, "long-review") as other:
        waiting = await other.get_task(GetTaskRequest(id=task_id))
        assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        assert asked(waiting) == question
        refused = await sent(other, reply("perhaps", waiting))
    assert refused.id == task_id
    assert refused.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert asked(refused).startswith("Answer 'approve' or 'reject', not 'perhaps'.")
    assert asked(refused).endswith(question)
    workers.apis[0].wait_until_serving(timeout=START_TIMEOUT)
    async with agent(workers, 0, "long-review") as restarted:
        streamed = [event async for event in restarted.send_message(reply("approve", refused))]
        done = await restarted.get_task(GetTaskRequest(id=task_id))
        with pytest.raises(A2AError) as late:
            await sent(restarted, reply("approve", done))
    answer = "Background report for: Quarterly risks"
    assert {
        event.status_update.task_id for event in streamed if event.HasField("status_update")
    } == {task_id}
    assert streamed[-1].status_update.status.state == TaskState.TASK_STATE_COMPLETED
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert done.artifacts[0].parts[0].text == answer
    assert "not waiting for input (it is completed)" in str(late.value)


async def test_a_paused_task_resubscribed_or_cancelled(workers: Deployment) -> None:
    """Resubscribing to a task that waits gives the task with its question (nothing runs);
    cancelling it ends it, and an answer after that is refused."""
    async with agent(workers, 0, "long-review") as client:
        waiting = await sent(client, started("Cancelled risks"))
        assert waiting.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
        resubscribed = [
            event async for event in client.subscribe(SubscribeToTaskRequest(id=waiting.id))
        ]
        cancelled = await client.cancel_task(CancelTaskRequest(id=waiting.id))
    async with agent(workers, 1, "long-review") as other:
        fetched = await other.get_task(GetTaskRequest(id=waiting.id))
        with pytest.raises(A2AError) as late:
            await sent(other, reply("approve", waiting))
    assert [event.task.status.state for event in resubscribed] == [
        TaskState.TASK_STATE_INPUT_REQUIRED
    ]
    assert asked(resubscribed[0].task) == asked(waiting)
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED
    assert fetched.status.state == TaskState.TASK_STATE_CANCELED
    assert "not waiting for input (it is canceled)" in str(late.value)
