"""The client half of MCP tasks (`io.modelcontextprotocol/tasks`, SEP-2663) on the official
`mcp` SDK, which ships no implementation of the extension but the means for one
(`ClientExtension`, `ResultClaim`, `send_request` with any request type).

`Tasks()` in `Client(extensions=[...])` declares the extension on every request. With it,
`client.call_tool(...)` polls a task handle to its end and returns the tool result, as the
extension asks of a client with a fixed `tools/call` contract; `client.session.call_tool(...,
allow_claimed=True)` returns the handle itself, for `get_task` and `cancel_task`.
"""

from __future__ import annotations

from typing import Literal

import anyio
import mcp_types as types
from mcp.client.extension import ClaimContext, ClientExtension, ResultClaim
from mcp.client.session import ClientSession

TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
ENDED = frozenset({"completed", "failed", "cancelled"})


class TaskHandle(types.Result):
    """`CreateTaskResult`: what a `tools/call` answers when it became a task."""

    result_type: Literal["task"]
    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None


class TaskState(types.Result):
    """`tasks/get`'s `DetailedTask`."""

    task_id: str
    status: str
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    ttl_ms: int | None
    poll_interval_ms: int | None = None
    result: types.CallToolResult | None = None
    error: dict[str, object] | None = None
    # `input_required`: the requests to fulfil (`tasks/update`), by key.
    input_requests: dict[str, types.ElicitRequest] | None = None


class TaskParams(types.RequestParams):
    task_id: str


class UpdateTaskParams(TaskParams):
    input_responses: dict[str, object]


class GetTask(types.Request[TaskParams, Literal["tasks/get"]]):
    method: Literal["tasks/get"] = "tasks/get"
    params: TaskParams
    name_param = "taskId"  # the extension's routing header, `Mcp-Name`


class CancelTask(types.Request[TaskParams, Literal["tasks/cancel"]]):
    method: Literal["tasks/cancel"] = "tasks/cancel"
    params: TaskParams
    name_param = "taskId"


class UpdateTask(types.Request[UpdateTaskParams, Literal["tasks/update"]]):
    method: Literal["tasks/update"] = "tasks/update"
    params: UpdateTaskParams
    name_param = "taskId"


async def get_task(session: ClientSession, task_id: str) -> TaskState:
    return await session.send_request(GetTask(params=TaskParams(task_id=task_id)), TaskState)


async def cancel_task(session: ClientSession, task_id: str) -> types.EmptyResult:
    request = CancelTask(params=TaskParams(task_id=task_id))
    return await session.send_request(request, types.EmptyResult)


async def update_task(
    session: ClientSession, task_id: str, responses: dict[str, object]
) -> types.EmptyResult:
    request = UpdateTask(params=UpdateTaskParams(task_id=task_id, input_responses=responses))
    return await session.send_request(request, types.EmptyResult)


async def _until_ended(handle: TaskHandle, ctx: ClaimContext) -> types.CallToolResult:
    """Poll at the server's interval until the task ends; its tool result."""
    while True:
        state = await get_task(ctx.session, handle.task_id)
        if state.status in ENDED:
            if state.result is not None:
                return state.result
            text = state.status_message or f"The task ended {state.status}."
            return types.CallToolResult(
                content=[types.TextContent(type="text", text=text)], is_error=True
            )
        await anyio.sleep((state.poll_interval_ms or 1000) / 1000)


class Tasks(ClientExtension):
    identifier = TASKS_EXTENSION

    def claims(self) -> list[ResultClaim[TaskHandle]]:
        return [ResultClaim(result_type="task", model=TaskHandle, resolve=_until_ended)]
