"""MCP tasks (the `io.modelcontextprotocol/tasks` extension, SEP-2663) as background Responses.

A `tools/call` of a graph that can run in the background, from a client that declared the
extension on the request (2026-07-28 clients only: the handshake era cannot carry it), is
submitted as a background Response on the configured engine and answered at once with a task
handle (`resultType: "task"`). The task id is the Response id, so any API process answers for
the task, after a restart too:

- `tasks/get` is a poll of the Response: `working` until it ends, then `completed` with the
  tool result inlined (a failed run is a completed task whose result has `isError`, as the
  extension reserves `failed` for JSON-RPC errors), or `cancelled`;
- `tasks/cancel` cancels the run on the engine;
- a graph that pauses (`interrupt()`) ends its Response with `lgos_interrupt` calls: the task
  is `input_required`, its `inputRequests` one form elicitation per question (keyed by review
  id, the forms a foreground call would show); `tasks/update` answers them with another
  background Response (`previous_response_id`, `function_call_output`) that resumes the same
  checkpoint, and the task's Responses are its chain in the durable log
  (`protocols.background.TaskChain`). A form filled in a way the question does not take is a
  JSON-RPC error naming why; an answer the graph refuses asks again (`statusMessage`, and the
  forms' message, say why). Without every answer the task keeps waiting (acknowledged).

The `mcp` SDK 2.3.0 carries no implementation of the extension, only the means to add one
(extension capabilities, custom request methods, result shapes outside the core vocabulary);
this module is LGOS's, on those means.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Literal, Self

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import Field, JsonValue

from lgos.core.client_settings import SETTINGS_KEY
from lgos.core.errors import LgosError, NotFoundError
from lgos.core.registry import GraphConfig, GraphFeature
from lgos.core.request import GraphRequest
from lgos.protocols.background import (
    ChainView,
    TaskChain,
    answer_request,
    answer_text,
    background_request,
    can_run_in_background,
    failure_message,
    interrupt_calls,
)
from lgos.protocols.mcp.reviews import Question, RefusedAnswerError, question_for
from lgos.protocols.mcp.tools import structured_content
from lgos.protocols.questions import pending_of_call
from lgos.service.background import BackgroundResponses

Scope = Callable[[ServerRequestContext[Any]], Awaitable[str]]
TASKS_EXTENSION = "io.modelcontextprotocol/tasks"
# The JSON-RPC code of a request from a client that did not declare a capability it needs.
MISSING_REQUIRED_CLIENT_CAPABILITY = -32021
# What a client is told to wait between polls (a hint: the engine answers any rate).
POLL_INTERVAL_MS = 1000
TaskStatus = Literal["working", "input_required", "completed", "failed", "cancelled"]
STATUSES: Mapping[str, TaskStatus] = {
    "queued": "working",
    "in_progress": "working",
    "completed": "completed",
    "failed": "completed",
    "incomplete": "completed",
    "cancelled": "cancelled",
}
STATUS_MESSAGES = {"queued": "Queued on the background engine.", "in_progress": "Running."}
WAITING_MESSAGE = "Waiting for an answer: see inputRequests."


class TaskParams(types.RequestParams):
    """`tasks/get`, `tasks/cancel`: the task named."""

    task_id: str = Field(max_length=1000)


class UpdateTaskParams(TaskParams):
    input_responses: dict[str, JsonValue] = Field(default_factory=dict)


class TaskFields(types.Result):
    """A task as the extension describes it (`Task`): the handle, and the state polls show."""

    task_id: str
    status: TaskStatus
    status_message: str | None = None
    created_at: str
    last_updated_at: str
    # None: kept for as long as the background Response is.
    ttl_ms: int | None = None
    poll_interval_ms: int | None = POLL_INTERVAL_MS

    @classmethod
    def of(cls, response: Mapping[str, Any], first: Mapping[str, Any] | None = None) -> Self:
        """The task of a Response (`first`: its chain's first, when it is a later one: the
        task's id and creation time are the first's)."""
        status = response["status"]
        updated = response.get("completed_at") or response["created_at"]
        first = first or response
        return cls(
            task_id=first["id"],
            status=STATUSES.get(status, "completed"),
            status_message=STATUS_MESSAGES.get(status) or failure_message(response),
            created_at=_iso(first["created_at"]),
            last_updated_at=_iso(updated),
        )

    def wire(self) -> dict[str, JsonValue]:
        """The wire form. `ttlMs` is required even when null, which the SDK's dump (without
        nulls) would leave out."""
        dumped: dict[str, JsonValue] = self.model_dump(
            by_alias=True, mode="json", exclude_none=True
        )
        dumped["ttlMs"] = self.ttl_ms
        return dumped


class CreateTaskResult(TaskFields):
    """The answer to a `tools/call` that became a task."""

    result_type: Literal["task"] = "task"


class DetailedTask(TaskFields):
    """`tasks/get`: the task, with the tool result once it completed."""

    result_type: Literal["complete"] = "complete"
    result: types.CallToolResult | None = None
    input_requests: dict[str, types.ElicitRequest] | None = None


class McpTasks:
    """The task methods of one MCP server, over the background Responses of its engine."""

    def __init__(self, background: BackgroundResponses, scope: Scope) -> None:
        """`scope(ctx)`: the caller's owner scope, whose tasks alone the caller sees."""
        self.background = background
        self.scope = scope
        # Tasks that pause need the durable log for their chain of Responses.
        self.chain = TaskChain(background) if background.events is not None else None

    def install(self, server: Server[Any]) -> None:
        """Advertise the extension and serve its methods on `server`."""
        server.extensions[TASKS_EXTENSION] = {}
        server.add_request_handler("tasks/get", TaskParams, self.get)
        server.add_request_handler("tasks/update", UpdateTaskParams, self.update)
        server.add_request_handler("tasks/cancel", TaskParams, self.cancel)

    def wanted(self, ctx: ServerRequestContext[Any], config: GraphConfig) -> bool:
        """Whether this call becomes a task: the server decides, for a client that can take one."""
        pauses = config.supports(GraphFeature.INTERRUPTS)
        return (
            can_run_in_background(config, self.background)
            and (self.chain is not None or not pauses)
            and declared(ctx)
        )

    async def start(self, model: str, request: GraphRequest, owner_scope: str) -> CreateTaskResult:
        """Submit the run; the handle once the engine holds it (a poll finds it from then on)."""
        decoded = background_request(model, request, {}, stream=False)
        response = await self.background.create(
            decoded, owner_scope=owner_scope, idempotency_key=None
        )
        return CreateTaskResult.of(response)

    async def get(self, ctx: ServerRequestContext[Any], params: TaskParams) -> dict[str, JsonValue]:
        view = await self._view(ctx, params.task_id)
        task = DetailedTask.of(view.latest, view.first)
        paused = view.paused
        if view.cancelled:
            task.status, task.status_message = "cancelled", None
        elif paused is not None:
            task.status = "input_required"
            task.status_message = view.note or WAITING_MESSAGE
            task.input_requests = input_requests(questions_of(paused), view.note)
        elif task.status == "completed":
            config = self.background.registry.get(view.latest["model"])
            task.result = tool_result(view.latest, config)
        return task.wire()

    async def update(
        self, ctx: ServerRequestContext[Any], params: UpdateTaskParams
    ) -> types.EmptyResult:
        """The answers to a waiting task's forms: its next Response. Responses to keys that are
        not outstanding are ignored, as the extension asks."""
        view = await self._view(ctx, params.task_id)
        paused = view.paused
        if paused is None:
            return types.EmptyResult()
        answers: dict[str, str] = {}
        for question in questions_of(paused):
            raw = params.input_responses.get(question.review_id)
            if raw is None:
                return types.EmptyResult()  # not every question answered: still waiting
            try:
                result = types.ElicitResult.model_validate(raw)
            except ValueError:
                raise MCPError(
                    types.INVALID_PARAMS,
                    f"inputResponses.{question.review_id}: not an ElicitResult",
                ) from None
            if result.action != "accept":
                return types.EmptyResult()  # declined: the review keeps waiting
            try:
                answers[question.review_id] = question.answer_from(result.content)
            except RefusedAnswerError as refusal:
                raise MCPError(types.INVALID_PARAMS, str(refusal)) from None
        model = str(view.first["model"])
        settings = (paused.get("metadata") or {}).get(SETTINGS_KEY)
        metadata = {SETTINGS_KEY: str(settings)} if settings is not None else {}
        try:
            response = await self.background.create(
                answer_request(model, str(paused["id"]), answers, metadata, stream=False),
                owner_scope=await self.scope(ctx),
                idempotency_key=None,
            )
        except LgosError as error:
            raise MCPError(types.INVALID_PARAMS, error.message) from None
        assert self.chain is not None
        # Lost to another answer of the same pause: that one goes on, this one is refused by
        # the worker; the task shows the winner.
        await self.chain.join(params.task_id, view, response["id"])
        return types.EmptyResult()

    async def cancel(self, ctx: ServerRequestContext[Any], params: TaskParams) -> types.EmptyResult:
        view = await self._view(ctx, params.task_id)
        if view.paused is not None and self.chain is not None:
            await self.chain.cancel_waiting(params.task_id, view)
        elif not view.cancelled and STATUSES.get(view.latest["status"]) == "working":
            await self.background.cancel(view.latest["id"], owner_scope=await self.scope(ctx))
        return types.EmptyResult()

    async def _view(self, ctx: ServerRequestContext[Any], task_id: str) -> ChainView:
        if not declared(ctx):
            raise MCPError(
                MISSING_REQUIRED_CLIENT_CAPABILITY,
                "Missing required client capability",
                {"requiredCapabilities": {"extensions": {TASKS_EXTENSION: {}}}},
            )
        scope = await self.scope(ctx)
        try:
            if self.chain is not None:
                return await self.chain.view(task_id, scope)
            response = await self.background.retrieve(task_id, owner_scope=scope)
        except NotFoundError:
            # Another owner's task is indistinguishable from one that does not exist.
            raise MCPError(
                types.INVALID_PARAMS, "Failed to retrieve task: Task not found"
            ) from None
        return ChainView([], response, response, None, cancelled=False)


def questions_of(response: Mapping[str, Any]) -> list[Question]:
    """The forms of a paused Response's questions, as a foreground call would show them."""
    return [
        question_for(*pending_of_call(call_id, arguments))
        for call_id, arguments in interrupt_calls(response)
    ]


def input_requests(questions: list[Question], note: str | None) -> dict[str, types.ElicitRequest]:
    """One form elicitation per question, keyed by its review id."""
    return {
        question.review_id: types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=question.message if note is None else f"{note}\n\n{question.message}",
                requested_schema=question.requested_schema,
            )
        )
        for question in questions
    }


def declared(ctx: ServerRequestContext[Any]) -> bool:
    """The client declared the extension on this request (only 2026-07-28 requests carry it)."""
    if ctx.protocol_version not in MODERN_PROTOCOL_VERSIONS:
        return False
    capabilities = ctx.session.client_capabilities
    extensions = capabilities.extensions if capabilities is not None else None
    return bool(extensions) and TASKS_EXTENSION in (extensions or {})


def tool_result(response: Mapping[str, Any], config: GraphConfig) -> types.CallToolResult:
    """The tool result the run gave, as a foreground call would have returned it."""
    failure = failure_message(response)
    if response["status"] != "completed":
        text = failure or f"The run ended {response['status']}."
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], is_error=True
        )
    text = answer_text(response)
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured_content(config, text),
    )


def _iso(unix_seconds: int) -> str:
    return datetime.fromtimestamp(unix_seconds, UTC).isoformat().replace("+00:00", "Z")
