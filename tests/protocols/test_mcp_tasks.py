"""MCP tasks (`io.modelcontextprotocol/tasks`) against a real `lgos serve` on the in-memory
engine: a background graph called by a client that declares the extension is a task (a
background Response), polled, cancelled, and refused with protocol errors for bad task ids.
A client that does not declare it gets the answer in the call, as before.

`tests/background/test_mcp_tasks.py` runs the same tasks on DBOS and Hatchet across API
processes and a restart."""

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

from tests.support.mcp_tasks import (
    TaskHandle,
    Tasks,
    TaskState,
    cancel_task,
    get_task,
    update_task,
)
from tests.support.processes import Process

pytestmark = [pytest.mark.anyio, pytest.mark.processes, pytest.mark.timeout(300, func_only=True)]

NOW = {"delay_seconds": 0}
LONG = {"delay_seconds": 300}
# How long a poll loop waits for a state the engine reaches at once (a bound, not a timing).
DEADLINE_SECONDS = 60


@asynccontextmanager
async def mcp_client(
    server: Process, tenant: str = "acme", *, tasks: bool = True, mode: str = "auto"
) -> AsyncIterator[Client]:
    """An MCP client on `server`'s /mcp as `tenant`, declaring the tasks extension unless
    `tasks=False`."""
    async with httpx2.AsyncClient(headers={"x-tenant": tenant}, timeout=60) as http:
        transport = streamable_http_client(server.base_url + "/mcp", http_client=http)
        extensions = [Tasks()] if tasks else []
        async with Client(transport, mode=mode, extensions=extensions) as connected:  # type: ignore[arg-type]
            yield connected


async def start(connected: Client, settings: dict[str, int], text: str) -> TaskHandle:
    handle = await connected.session.call_tool(
        "background-mock", {"input": text, "settings": settings}, allow_claimed=True
    )
    assert isinstance(handle, TaskHandle), handle
    return handle


async def until(connected: Client, task_id: str, status: str) -> TaskState:
    with anyio.fail_after(DEADLINE_SECONDS):
        while True:
            state = await get_task(connected.session, task_id)
            if state.status == status:
                return state
            await anyio.sleep(0.1)


def text_of(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


async def test_a_background_graph_runs_as_a_task_of_the_engine(server: Process) -> None:
    async with mcp_client(server) as connected:
        listed = connected.server_capabilities
        handle = await start(connected, NOW, "Quarterly risks")
        done = await until(connected, handle.task_id, "completed")
    assert listed.extensions is not None
    assert "io.modelcontextprotocol/tasks" in listed.extensions
    # The task is a background Response: the OpenAI route shows the same run.
    assert handle.task_id.startswith("resp_")
    assert handle.status == "working"
    assert handle.ttl_ms is None
    assert done.result is not None
    assert not done.result.is_error
    assert text_of(done.result) == "Background report for: Quarterly risks"
    polled = httpx2.get(
        f"{server.base_url}/v1/responses/{handle.task_id}", headers={"x-tenant": "acme"}
    )
    assert polled.json()["status"] == "completed"
    assert polled.json()["output"][-1]["content"][0]["text"] == text_of(done.result)


async def test_the_client_call_polls_the_task_to_its_result(server: Process) -> None:
    async with mcp_client(server) as connected:
        result = await connected.call_tool("background-mock", {"input": "Churn", "settings": NOW})
    assert text_of(result) == "Background report for: Churn"


async def test_cancelling_the_task_cancels_the_run(server: Process) -> None:
    async with mcp_client(server) as connected:
        handle = await start(connected, LONG, "Never")
        acknowledged = await cancel_task(connected.session, handle.task_id)
        cancelled = await until(connected, handle.task_id, "cancelled")
        again = await cancel_task(connected.session, handle.task_id)
    assert acknowledged.result_type == "complete"  # an empty acknowledgement
    assert cancelled.result is None
    assert again.result_type == "complete"  # an ended task: acknowledged, unchanged
    polled = httpx2.get(
        f"{server.base_url}/v1/responses/{handle.task_id}", headers={"x-tenant": "acme"}
    )
    assert polled.json()["status"] == "cancelled"


@pytest.mark.parametrize(
    ("mode", "tasks"), [("legacy", False), ("2026-07-28", False), ("legacy", True)]
)
async def test_a_client_without_the_extension_gets_the_answer_in_the_call(
    server: Process, mode: str, tasks: bool
) -> None:
    """A handshake-era session cannot carry the extension even when the client has it."""
    async with mcp_client(server, tasks=tasks, mode=mode) as connected:
        result = await connected.call_tool("background-mock", {"input": "Q3", "settings": NOW})
    assert not result.is_error
    assert text_of(result) == "Background report for: Q3"


async def test_bad_arguments_are_a_tool_error_before_any_task(server: Process) -> None:
    async with mcp_client(server) as connected:
        result = await connected.session.call_tool(
            "background-mock", {"input": "x", "settings": {"delay_seconds": -1}}, allow_claimed=True
        )
    assert isinstance(result, types.CallToolResult)
    assert result.is_error
    assert "delay_seconds" in text_of(result)


async def test_unknown_and_foreign_tasks_are_protocol_errors(server: Process) -> None:
    async with mcp_client(server, "acme") as acme, mcp_client(server, "globex") as globex:
        handle = await start(acme, LONG, "Mine")
        errors: dict[str, int] = {}
        for name, call in {
            "unknown get": lambda: get_task(acme.session, "resp_" + "0" * 40),
            "garbage get": lambda: get_task(acme.session, "not a task"),
            "foreign get": lambda: get_task(globex.session, handle.task_id),
            "foreign cancel": lambda: cancel_task(globex.session, handle.task_id),
            "foreign update": lambda: update_task(globex.session, handle.task_id, {}),
            "huge id": lambda: get_task(acme.session, "x" * 100_000),
        }.items():
            with pytest.raises(MCPError) as raised:
                await call()
            errors[name] = raised.value.code
        mine = await get_task(acme.session, handle.task_id)
        await cancel_task(acme.session, handle.task_id)
    assert set(errors.values()) == {types.INVALID_PARAMS}, errors
    assert mine.status == "working"  # the foreign cancel did nothing


@pytest.mark.parametrize("mode", ["legacy", "2026-07-28"])
async def test_a_client_that_did_not_declare_the_extension_cannot_poll(
    server: Process, mode: str
) -> None:
    """Also a handshake-era session, which cannot carry the extension at all."""
    async with mcp_client(server) as owner:
        handle = await start(owner, NOW, "Declared")
    async with mcp_client(server, tasks=False, mode=mode) as undeclared:
        with pytest.raises(MCPError) as raised:
            await get_task(undeclared.session, handle.task_id)
    assert raised.value.code == -32021
    assert raised.value.error.data == {
        "requiredCapabilities": {"extensions": {"io.modelcontextprotocol/tasks": {}}}
    }


async def test_malformed_task_requests_are_protocol_errors(server: Process) -> None:
    """Raw JSON-RPC, as a client the SDK does not guard would send it."""
    headers = {
        "x-tenant": "acme",
        "accept": "application/json, text/event-stream",
        "content-type": "application/json",
        "mcp-protocol-version": "2026-07-28",
        "mcp-method": "tasks/get",
    }
    meta = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientInfo": {"name": "raw", "version": "0"},
        "io.modelcontextprotocol/clientCapabilities": {
            "extensions": {"io.modelcontextprotocol/tasks": {}}
        },
    }
    statuses: list[int] = []
    codes: list[int] = []
    for params in ({"_meta": meta}, {"_meta": meta, "taskId": 7}, {"_meta": meta, "taskId": None}):
        body = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": params}
        answer = httpx2.post(
            server.base_url + "/mcp", content=json.dumps(body), headers=headers, timeout=30
        )
        statuses.append(answer.status_code)
        codes.append(_error_code(answer.text))
    assert all(status < 500 for status in statuses), statuses
    assert codes == [types.INVALID_PARAMS] * 3, codes


def _error_code(text: str) -> int:
    """The JSON-RPC error code of a plain JSON or one-event SSE answer."""
    for line in text.splitlines():
        payload = line.removeprefix("data:").strip()
        if payload.startswith("{"):
            return int(json.loads(payload)["error"]["code"])
    raise AssertionError(text)
