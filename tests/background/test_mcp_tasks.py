"""MCP tasks on DBOS and on Hatchet, across real processes: the task is a background Response
of the engine, so the other API process (or a restarted one) answers `tasks/get` for it, and
`tasks/cancel` there stops the worker's run.

The client is the official `mcp` SDK with the tasks extension of `tests.support.mcp_tasks`;
the graphs are `tests.background.registry`'s `background-mock` and `gated-steps`."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio
import httpx2
import mcp_types as types
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from demo.registry import EVERYTHING_ANSWER
from tests.background.conftest import Deployment, spawn
from tests.background.test_conformance import step_seen, topic
from tests.support.mcp_tasks import (
    TaskHandle,
    Tasks,
    TaskState,
    cancel_task,
    get_task,
    update_task,
)
from tests.support.processes import START_TIMEOUT

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.postgres,
    pytest.mark.processes,
    pytest.mark.timeout(600, func_only=True),
]

# A bound for a state the run reaches by itself (never a timing assertion).
DEADLINE_SECONDS = 180


@asynccontextmanager
async def mcp(deployment: Deployment, api: int) -> AsyncIterator[Client]:
    async with httpx2.AsyncClient(timeout=120) as http:
        url = f"{deployment.apis[api].base_url}/mcp"
        transport = streamable_http_client(url, http_client=http)
        async with Client(transport, extensions=[Tasks()]) as client:
            yield client


async def start(client: Client, model: str, arguments: dict[str, object]) -> TaskHandle:
    handle = await client.session.call_tool(model, arguments, allow_claimed=True)
    assert isinstance(handle, TaskHandle), handle
    return handle


async def until(client: Client, task_id: str, status: str) -> TaskState:
    with anyio.fail_after(DEADLINE_SECONDS):
        while True:
            state = await get_task(client.session, task_id)
            if state.status == status:
                return state
            assert state.status == "working", state
            await anyio.sleep(0.2)


def text_of(result: types.CallToolResult | None) -> str:
    assert result is not None
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


async def test_the_other_api_gives_the_tasks_status_and_result(workers: Deployment) -> None:
    async with mcp(workers, 1) as client:
        handle = await start(
            client,
            "background-mock",
            {"input": "Quarterly risks", "settings": {"delay_seconds": 0}},
        )
    async with mcp(workers, 0) as other:
        done = await until(other, handle.task_id, "completed")
    assert handle.task_id.startswith("resp_")
    assert done.result is not None
    assert not done.result.is_error
    assert text_of(done.result) == "Background report for: Quarterly risks"


async def test_a_declared_answer_shape_is_the_tasks_structured_content(
    deployment: Deployment,
) -> None:
    """everything-background declares its answer's schema: the task's result holds the object,
    asked of the worker's run as a strict JSON schema (on every engine, the in-memory one too)."""
    async with mcp(deployment, 0) as client:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        handle = await start(client, "everything-background", {"input": "Is the sky blue?"})
        done = await until(client, handle.task_id, "completed")
    assert tools["everything-background"].output_schema == EVERYTHING_ANSWER
    assert done.result is not None
    assert not done.result.is_error, text_of(done.result)
    assert done.result.structured_content is not None
    assert set(done.result.structured_content) == {"answer", "confidence"}
    assert json.loads(text_of(done.result)) == done.result.structured_content


async def test_a_task_outlives_the_api_that_created_it(workers: Deployment) -> None:
    """The API process is stopped while background-mock runs and started again: the new
    process answers for the task, which completes."""
    async with mcp(workers, 0) as client:
        handle = await start(
            client, "background-mock", {"input": "Restarts", "settings": {"delay_seconds": 10}}
        )
    workers.apis[0].stop()
    workers.apis[0] = spawn("serve", workers.env, "--port", "0")
    workers.apis[0].wait_until_serving(timeout=START_TIMEOUT)
    async with mcp(workers, 0) as restarted:
        done = await until(restarted, handle.task_id, "completed")
    assert text_of(done.result) == "Background report for: Restarts"


async def test_a_task_mid_run_survives_a_restart_and_cancels_on_the_other_api(
    workers: Deployment,
) -> None:
    name = topic()
    async with mcp(workers, 0) as client:
        handle = await start(client, "gated-steps", {"input": name})
    await step_seen(workers, name, "step_2", "started")
    workers.apis[0].stop()
    workers.apis[0] = spawn("serve", workers.env, "--port", "0")
    workers.apis[0].wait_until_serving(timeout=START_TIMEOUT)
    async with mcp(workers, 0) as restarted:
        working = await get_task(restarted.session, handle.task_id)
    async with mcp(workers, 1) as other:
        await cancel_task(other.session, handle.task_id)
        cancelled = await until(other, handle.task_id, "cancelled")
    assert working.status == "working"
    assert cancelled.result is None
    await step_seen(workers, name, "step_2", "cancelled")


async def test_a_paused_task_asks_in_input_requests_and_resumes_after_a_restart(
    workers: Deployment,
) -> None:
    """background-interrupt pauses on the engine: the task is input_required with the review as
    a form; the API that created it is restarted; a form filled outside the question is a
    protocol error and the task keeps waiting; 'approve' resumes the same checkpoint."""
    arguments = {"input": "Quarterly risks", "settings": {"delay_seconds": 0}}
    async with mcp(workers, 0) as client:
        handle = await start(client, "background-interrupt", arguments)
        waiting = await until(client, handle.task_id, "input_required")
    workers.apis[0].stop()
    workers.apis[0] = spawn("serve", workers.env, "--port", "0")
    assert waiting.input_requests is not None
    ((key, form),) = waiting.input_requests.items()
    assert isinstance(form.params, types.ElicitRequestFormParams)
    assert "Background report for: Quarterly risks" in form.params.message
    assert form.params.requested_schema["properties"]["answer"]["enum"] == ["approve", "reject"]
    async with mcp(workers, 1) as other:
        with pytest.raises(MCPError) as refused:
            await update_task(
                other.session,
                handle.task_id,
                {key: {"action": "accept", "content": {"answer": "x"}}},
            )
        still = await get_task(other.session, handle.task_id)
    assert refused.value.error.code == types.INVALID_PARAMS
    assert "does not fit the question" in refused.value.error.message
    assert still.status == "input_required"
    workers.apis[0].wait_until_serving(timeout=START_TIMEOUT)
    async with mcp(workers, 0) as restarted:
        approve = {key: {"action": "accept", "content": {"answer": "approve"}}}
        await update_task(restarted.session, handle.task_id, approve)
        done = await until(restarted, handle.task_id, "completed")
        # Answered once: the same answer again is acknowledged and changes nothing.
        await update_task(restarted.session, handle.task_id, approve)
        again = await get_task(restarted.session, handle.task_id)
    assert done.task_id == handle.task_id
    assert text_of(done.result) == "Background report for: Quarterly risks"
    assert again.status == "completed"
    assert text_of(again.result) == text_of(done.result)


async def test_a_paused_task_cancelled_on_the_other_api(workers: Deployment) -> None:
    """Cancelling a task that waits ends it (nothing runs); a late answer changes nothing."""
    arguments = {"input": "Cancelled risks", "settings": {"delay_seconds": 0}}
    async with mcp(workers, 0) as client:
        handle = await start(client, "background-interrupt", arguments)
        waiting = await until(client, handle.task_id, "input_required")
    assert waiting.input_requests is not None
    approve = {
        key: {"action": "accept", "content": {"answer": "approve"}}
        for key in waiting.input_requests
    }
    async with mcp(workers, 1) as other:
        await cancel_task(other.session, handle.task_id)
        cancelled = await get_task(other.session, handle.task_id)
        await update_task(other.session, handle.task_id, approve)
        after = await get_task(other.session, handle.task_id)
    assert (cancelled.status, after.status) == ("cancelled", "cancelled")
    assert cancelled.input_requests is None
    assert after.result is None
