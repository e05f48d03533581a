"""The MCP endpoint: `tools/list` from the registry, `tools/call` runs the graph.

A call runs through the service layer exactly as an OpenAI request does (`plan_run`,
`run_events`): the same pausable runs, leases, owner scope and answer validation. While the
graph runs, its text and status events go to the client as progress notifications; a client
that cancels the call cancels the run. A pause asks the person through the client:

- a handshake-era client (protocol 2025-11-25 and older) that can show forms gets
  `elicitation/create` requests while the call waits, and the answers resume the same
  checkpoint;
- a 2026-07-28 client gets an `input_required` result carrying the forms, and its retry
  carries the answers (the run waits on its checkpoint in between, not in this process);
- any other client gets a tool result saying a review is waiting and how to answer it
  (`review_id` and `answer` on the same tool).

A refused answer (one the form or the graph does not accept) is asked again, saying why.
"""

from __future__ import annotations

import base64
import inspect
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager
from importlib import metadata
from typing import Any

import mcp_types as types
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.shared.exceptions import MCPError
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import JsonValue
from starlette.requests import Request
from starlette.routing import BaseRoute, Route

from lgos.core.errors import SERVER_ERROR_MESSAGE, InvalidRequestError, LgosError, NotFoundError
from lgos.core.registry import GraphConfig, GraphRegistry
from lgos.core.request import GraphRequest
from lgos.core.run_events import Commentary, Finished, Interrupted, TextDelta
from lgos.protocols.mcp.reviews import Question, RefusedAnswerError, question_for, waiting_text
from lgos.protocols.mcp.tasks import McpTasks
from lgos.protocols.mcp.tools import (
    decode_arguments,
    input_schema,
    output_schema,
    structured_content,
)
from lgos.protocols.origins import OriginGuard
from lgos.service.background import BackgroundResponses
from lgos.service.runs import RunPlan, plan_run, run_events

logger = logging.getLogger("lgos.mcp")

OwnerScope = Callable[[Request], str | Awaitable[str]]
ToolOutcome = types.CallToolResult | types.InputRequiredResult
SHARED_OWNER_SCOPE = "default"
# Refusals in a row before the call stops asking and leaves the review waiting (a client that
# answers by itself must not loop forever).
MAX_ASKS = 10


class McpEndpoint:
    """The MCP server for one registry, and the Streamable HTTP route that serves it.

    `lifespan()` must be entered around serving (`create_app` does); the session manager
    keeps the sessions of handshake-era clients in this process.
    """

    def __init__(
        self,
        registry: GraphRegistry,
        owner_scope: OwnerScope | None = None,
        *,
        version: str | None = None,
        max_body_bytes: int | None = None,
        allowed_origins: Sequence[str] = (),
        background: BackgroundResponses | None = None,
    ) -> None:
        self.registry = registry
        self.allowed_origins = frozenset(allowed_origins)
        self.owner_scope = owner_scope
        self.server: Server[Any] = Server(
            "lgos",
            version=version if version is not None else _package_version(),
            instructions="Each tool runs one LangGraph graph served by LGOS.",
            on_list_tools=self.list_tools,
            on_call_tool=self.call_tool,
        )
        # Graphs that can run in the background run as MCP tasks, for clients that take them.
        self.tasks: McpTasks | None = None
        if background is not None and background.backend is not None:
            self.tasks = McpTasks(background, self._scope)
            self.tasks.install(self.server)
            # The same handler, registered again to answer a task handle too (the constructor's
            # signature only names the core results).
            self.server.add_request_handler(
                "tools/call", types.CallToolRequestParams, self.call_tool_or_task
            )
        options: dict[str, Any] = {}  # StreamableHTTPSessionManager's keyword arguments
        if max_body_bytes is not None:
            options["max_request_body_size"] = max_body_bytes
        # No DNS-rebinding host check: LGOS is served behind gateways under any host name,
        # like its OpenAI routes.
        self.manager = StreamableHTTPSessionManager(app=self.server, **options)

    def lifespan(self) -> AbstractAsyncContextManager[None]:
        return self.manager.run()

    def routes(self, path: str = "/mcp") -> list[BaseRoute]:
        app = OriginGuard(StreamableHTTPASGIApp(self.manager), self.allowed_origins)
        return [Route(path, app, include_in_schema=False)]

    async def list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[self._tool(model) for model in self.registry.model_ids])

    def _tool(self, model: str) -> types.Tool:
        config = self.registry.graphs[model]
        return types.Tool(
            name=model,
            description=config.description,
            input_schema=input_schema(config),
            output_schema=output_schema(config),
            annotations=types.ToolAnnotations(title=model, open_world_hint=False),
        )

    async def call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> ToolOutcome:
        result = await self.call_tool_or_task(ctx, params)
        assert not isinstance(result, dict)  # no task without McpTasks installed
        return result

    async def call_tool_or_task(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> ToolOutcome | dict[str, JsonValue]:
        """The tool's result, or a task handle (`resultType: "task"`) for a background run."""
        started = time.perf_counter()
        outcome = "failed"
        try:
            config = self.registry.get(params.name)
        except NotFoundError:
            raise MCPError(types.INVALID_PARAMS, f"Unknown tool: {params.name!r}") from None
        try:
            if self.tasks is not None and self.tasks.wanted(ctx, config):
                task = await self._start_task(params, config, await self._scope(ctx))
                outcome = "task" if isinstance(task, dict) else _outcome(task)
                return task
            result = await ToolCall(self, ctx, params, config, await self._scope(ctx)).run()
            outcome = _outcome(result)
            return result
        except BaseException as error:
            if not isinstance(error, Exception):
                outcome = "cancelled"
            raise
        finally:
            logger.info(
                "mcp.tool_call",
                extra={
                    "mcp.tool": params.name,
                    "outcome": outcome,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                },
            )

    async def _start_task(
        self, params: types.CallToolRequestParams, config: GraphConfig, scope: str
    ) -> types.CallToolResult | dict[str, JsonValue]:
        assert self.tasks is not None
        try:
            arguments = decode_arguments(params.name, config, params.arguments)
            if arguments.review_id is not None:
                # A task's review is answered on the task, not by a new call.
                return error_result("Answer a task's review with tasks/update.")
            return (await self.tasks.start(params.name, arguments.request, scope)).wire()
        except LgosError as error:
            # Refused before anything runs, as a foreground call's bad input is.
            return error_result(error.message)

    async def _scope(self, ctx: ServerRequestContext[Any]) -> str:
        if self.owner_scope is None or not isinstance(ctx.request, Request):
            return SHARED_OWNER_SCOPE
        scope = self.owner_scope(ctx.request)
        if inspect.isawaitable(scope):
            scope = await scope
        return scope


class ToolCall:
    """One `tools/call`: start or resume the run, ask what it asks, return its answer."""

    def __init__(
        self,
        endpoint: McpEndpoint,
        ctx: ServerRequestContext[Any],
        params: types.CallToolRequestParams,
        config: GraphConfig,
        scope: str,
    ) -> None:
        self.registry = endpoint.registry
        self.ctx = ctx
        self.params = params
        self.model = params.name
        self.config = config
        self.scope = scope
        self.progress = 0

    async def run(self) -> ToolOutcome:
        try:
            arguments = decode_arguments(self.model, self.config, self.params.arguments)
        except LgosError as error:
            return error_result(error.message)
        request = arguments.request
        try:
            if self.params.request_state is not None:
                return await self._continue_modern(request)
            if arguments.review_id is not None and arguments.answer is not None:
                plan = plan_run(self.config, answers={arguments.review_id: arguments.answer})
                return await self._run(request, plan, asked=None)
            return await self._run(request, plan_run(self.config, answers=None), asked=None)
        except LgosError as error:
            return error_result(error.message)
        except Exception:
            logger.exception("mcp.tool_call.failed", extra={"mcp.tool": self.model})
            return error_result(SERVER_ERROR_MESSAGE)

    async def _run(
        self, request: GraphRequest, plan: RunPlan, asked: list[Question] | None
    ) -> ToolOutcome:
        """Run (or resume) until the graph answers, or a pause needs the client."""
        note: str | None = None
        for _ in range(MAX_ASKS):
            try:
                terminal = await self._drive(request, plan)
            except InvalidRequestError as error:
                # The graph (or the question's schema) refused the answer; the run layer has put
                # the question back, so it is asked again, saying why.
                if plan.resume is None:
                    raise
                if asked is None:
                    return error_result(f"{error.message} The review is still waiting.")
                note = error.message
                questions = asked
            else:
                if isinstance(terminal, Finished):
                    return answer_result(self.config, terminal.text or terminal.message.text)
                questions = [question_for(terminal.run_id, item) for item in terminal.interrupts]
                note = None
            answers = await self._ask(questions, note)
            if not isinstance(answers, dict):
                return answers
            plan = plan_run(self.config, answers=answers)
            asked = questions
        return waiting_result(self.model, asked or [])

    async def _drive(self, request: GraphRequest, plan: RunPlan) -> Finished | Interrupted:
        events = run_events(
            self.registry, self.config, request, plan, scope=self.scope, streaming=True
        )
        try:
            async for event in events:
                if isinstance(event, TextDelta | Commentary):
                    await self._report(event.text)
                elif isinstance(event, Finished | Interrupted):
                    return event
        finally:
            await events.aclose()  # type: ignore[attr-defined]
        raise RuntimeError("the run ended without a terminal event")

    async def _report(self, text: str) -> None:
        """One progress notification per event (nothing goes out unless the client asked)."""
        if not text:
            return
        self.progress += 1
        await self.ctx.session.report_progress(self.progress, None, text)

    async def _ask(
        self, questions: list[Question], note: str | None
    ) -> dict[str, str] | ToolOutcome:
        """Answers by review id, or the outcome that leaves the review waiting."""
        if self._modern():
            if not self._can_elicit():
                return waiting_result(self.model, questions)
            return input_required(questions, note)
        if not (self._can_elicit() and self.ctx.session.can_send_request):
            return waiting_result(self.model, questions)
        answers: dict[str, str] = {}
        for question in questions:
            answer = await self._elicit(question, note)
            if answer is None:
                return waiting_result(self.model, questions)
            answers[question.review_id] = answer
        return answers

    async def _elicit(self, question: Question, note: str | None) -> str | None:
        """Ask one question until it gets an answer that fits; None when the person declines."""
        for _ in range(MAX_ASKS):
            message = question.message if note is None else f"{note}\n\n{question.message}"
            result = await self.ctx.session.elicit_form(
                message, question.requested_schema, related_request_id=self.ctx.request_id
            )
            if result.action != "accept":
                return None
            try:
                return question.answer_from(result.content)
            except RefusedAnswerError as refusal:
                note = str(refusal)
        return None

    async def _continue_modern(self, request: GraphRequest) -> ToolOutcome:
        """A 2026-07-28 retry: the answers to the forms of our `input_required` result."""
        questions = decode_state(self.params.request_state or "")
        responses = self.params.input_responses or {}
        answers: dict[str, str] = {}
        for key, question in zip(_input_keys(questions), questions, strict=True):
            response = responses.get(key)
            if not isinstance(response, types.ElicitResult) or response.action != "accept":
                return waiting_result(self.model, questions)
            try:
                answers[question.review_id] = question.answer_from(response.content)
            except RefusedAnswerError as refusal:
                return input_required(questions, str(refusal))
        return await self._run(request, plan_run(self.config, answers=answers), asked=questions)

    def _modern(self) -> bool:
        return self.ctx.protocol_version in MODERN_PROTOCOL_VERSIONS

    def _can_elicit(self) -> bool:
        capabilities = self.ctx.session.client_capabilities
        elicitation = capabilities.elicitation if capabilities is not None else None
        # `elicitation: {}` (the 2025-06-18 shape) means forms.
        return elicitation is not None and (elicitation.form is not None or elicitation.url is None)


def _package_version() -> str:
    try:
        return metadata.version("lgos")
    except metadata.PackageNotFoundError:  # pragma: no cover - a source tree without install
        return "0.0.0"


def text_result(text: str, *, error: bool = False) -> types.CallToolResult:
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=error)


def answer_result(config: GraphConfig, text: str) -> types.CallToolResult:
    """The graph's answer: its text, and for a graph with a declared answer shape the object
    too (`structuredContent`; the text is the same object as JSON, for older clients)."""
    result = text_result(text)
    result.structured_content = structured_content(config, text)
    return result


def error_result(message: str) -> types.CallToolResult:
    return text_result(message, error=True)


def waiting_result(model: str, questions: list[Question]) -> types.CallToolResult:
    reviews = [question.describe() for question in questions]
    result = text_result(waiting_text(model, questions))
    result.structured_content = {"status": "review_waiting", "reviews": reviews}
    return result


def input_required(questions: list[Question], note: str | None) -> types.InputRequiredResult:
    requests: dict[str, types.InputRequest] = {}
    for key, question in zip(_input_keys(questions), questions, strict=True):
        message = question.message if note is None else f"{note}\n\n{question.message}"
        requests[key] = types.ElicitRequest(
            params=types.ElicitRequestFormParams(
                message=message, requested_schema=question.requested_schema
            )
        )
    return types.InputRequiredResult(input_requests=requests, request_state=encode_state(questions))


def _input_keys(questions: list[Question]) -> list[str]:
    return [f"review-{index}" for index in range(len(questions))]


def encode_state(questions: list[Question]) -> str:
    """The questions the forms asked, so the retry reads its answers the same way. The client
    may alter it: it only shapes that client's own answers, which the run checks against its
    checkpoint's real questions (as on the OpenAI routes)."""
    payload = [
        [q.review_id, q.message, q.requested_schema, q.mode, list(q.choices)] for q in questions
    ]
    return base64.urlsafe_b64encode(json.dumps(payload).encode()).decode()


def decode_state(state: str) -> list[Question]:
    try:
        payload = json.loads(base64.urlsafe_b64decode(state.encode()))
        return [
            Question(str(review_id), str(message), dict(schema), str(mode), tuple(choices))
            for review_id, message, schema, mode, choices in payload
        ]
    except (ValueError, TypeError) as error:
        raise MCPError(types.INVALID_PARAMS, "Invalid requestState.") from error


def _outcome(result: ToolOutcome) -> str:
    if isinstance(result, types.InputRequiredResult):
        return "input_required"
    if result.is_error:
        return "error"
    if isinstance(result.structured_content, dict) and result.structured_content.get("status"):
        return "review_waiting"
    return "completed"
