"""The A2A endpoint: one agent per graph, over JSON-RPC (the official `a2a-sdk`).

Each graph `<model>` of the registry is an agent at `<path>/<model>` (JSON-RPC: A2A 1.0's
`SendMessage`, `SendStreamingMessage`, `GetTask`, `CancelTask`, `SubscribeToTask`, ... and
A2A 0.3's `message/send`, `message/stream`, `tasks/get`, `tasks/cancel`,
`tasks/resubscribe` on the same URL), its card at `<path>/<model>/.well-known/agent-card.json`.
The SDK's request handler keeps the tasks (in this process, per owner scope) and their event
streams; `GraphExecutor` runs them through the service layer. The tasks of background-by-default
graphs are background Responses of the engine instead (`background.BackgroundAgent`).
"""

from __future__ import annotations

import inspect
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AsyncExitStack, asynccontextmanager
from importlib import metadata
from typing import Any

from a2a.auth.user import User
from a2a.server.agent_execution import SimpleRequestContextBuilder
from a2a.server.agent_execution.context import RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes import DefaultServerCallContextBuilder
from a2a.server.routes.jsonrpc_dispatcher import JsonRpcDispatcher
from a2a.server.tasks import InMemoryTaskStore
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    SendMessageRequest,
    Task,
    TaskState,
)
from a2a.utils.constants import AGENT_CARD_WELL_KNOWN_PATH
from a2a.utils.errors import InvalidParamsError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route, request_response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from lgos.core.errors import LgosError
from lgos.core.registry import GraphConfig, GraphRegistry
from lgos.protocols.a2a.background import BackgroundAgent, runs_in_background
from lgos.protocols.a2a.executor import GraphExecutor, decode_message
from lgos.protocols.origins import INVALID_REQUEST, OriginGuard
from lgos.service.background import BackgroundResponses

logger = logging.getLogger("lgos.a2a")

OwnerScope = Callable[[Request], str | Awaitable[str]]
SHARED_OWNER_SCOPE = "default"
_SCOPE_STATE = "lgos_owner_scope"


class A2aEndpoint:
    """The agents of one registry and the routes that serve them. `lifespan()` must be
    entered around serving (`create_app` does): leaving it stops the tasks still running."""

    def __init__(
        self,
        registry: GraphRegistry,
        owner_scope: OwnerScope | None = None,
        *,
        max_body_bytes: int = 4 * 1024 * 1024,
        allowed_origins: Sequence[str] = (),
        background: BackgroundResponses | None = None,
    ) -> None:
        self.registry = registry
        self.owner_scope = owner_scope
        self.max_body_bytes = max_body_bytes
        self.allowed_origins = frozenset(allowed_origins)
        self.handlers: dict[str, DefaultRequestHandler] = {}
        for model in registry.model_ids:
            config = registry.graphs[model]
            # One store per agent: a task id of one graph is unknown to every other.
            store = InMemoryTaskStore()
            sdk: dict[str, Any] = {  # the SDK handler's keyword arguments, of several types
                "agent_executor": GraphExecutor(registry, model, store),
                "task_store": store,
                "agent_card": agent_card(model, config, "http://localhost/"),
                "request_context_builder": CheckedContextBuilder(model, config, store),
            }
            if background is not None and runs_in_background(config, background):
                self.handlers[model] = BackgroundAgent(model, config, background, **sdk)
            else:
                self.handlers[model] = DefaultRequestHandler(**sdk)

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            for handler in self.handlers.values():
                stack.push_async_callback(handler.aclose)
            yield

    def routes(self, path: str = "/a2a") -> list[BaseRoute]:
        routes: list[BaseRoute] = []
        for model, handler in self.handlers.items():
            base = f"{path}/{model}"
            dispatcher = JsonRpcDispatcher(
                handler, context_builder=ScopedContextBuilder(), enable_v0_3_compat=True
            )
            rpc = request_response(LoggedCalls(model, dispatcher).handle)
            app = OriginGuard(
                BodyLimit(ScopeResolver(rpc, self.owner_scope), self.max_body_bytes),
                self.allowed_origins,
            )
            routes.append(Route(base, app, methods=["POST"], include_in_schema=False))
            config = self.registry.graphs[model]
            routes.append(
                Route(
                    base + AGENT_CARD_WELL_KNOWN_PATH,
                    CardRoute(model, config),
                    methods=["GET"],
                    include_in_schema=False,
                )
            )
        return routes


def agent_card(model: str, config: GraphConfig, url: str) -> AgentCard:
    """The graph as an agent: the registry's name and description, one skill, one
    JSON-RPC interface at `url`."""
    return AgentCard(
        name=model,
        description=config.description,
        version=_package_version(),
        supported_interfaces=[
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="1.0"),
            AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version="0.3"),
        ],
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[
            AgentSkill(
                id=model,
                name=model,
                description=config.description,
                tags=sorted(feature.value for feature in config.features) or ["text"],
            )
        ],
    )


class LoggedCalls:
    """One `a2a.request` log record per JSON-RPC call: the agent, the method, how it ended
    (`ok`, or the JSON-RPC error code) and how long it took to answer (for a stream: to its
    first byte). The run behind a message has its own record (`a2a.message`)."""

    def __init__(self, model: str, dispatcher: JsonRpcDispatcher) -> None:
        self.model = model
        self.dispatcher = dispatcher

    async def handle(self, request: Request) -> Response:
        started = time.perf_counter()
        outcome = "failed"
        try:
            response = await self.dispatcher.handle_requests(request)
            outcome = _outcome(response)
            return response
        finally:
            logger.info(
                "a2a.request",
                extra={
                    "a2a.agent": self.model,
                    "a2a.method": await _method(request),
                    "outcome": outcome,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                },
            )


async def _method(request: Request) -> str | None:
    """The call's method, from the body the dispatcher already read (Starlette keeps it)."""
    try:
        body = await request.json()
    except Exception:  # not JSON, or the body was refused before it was read
        return None
    method = body.get("method") if isinstance(body, dict) else None
    return method if isinstance(method, str) else None


def _outcome(response: Response) -> str:
    if not isinstance(response, JSONResponse):
        return "ok"  # a stream: its errors travel inside it
    try:
        body = json.loads(bytes(response.body))
    except ValueError:
        return "ok"
    error = body.get("error") if isinstance(body, dict) else None
    return f"error {error.get('code')}" if isinstance(error, dict) else "ok"


class CardRoute:
    """The agent card, its URL from the request (LGOS is reached under many host names)."""

    def __init__(self, model: str, config: GraphConfig) -> None:
        self.model = model
        self.config = config

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        request = Request(scope)
        url = str(request.url).removesuffix(AGENT_CARD_WELL_KNOWN_PATH)
        card = agent_card_to_dict(agent_card(self.model, self.config, url))
        await JSONResponse(card)(scope, receive, send)


class ScopeUser(User):
    """The request's owner scope, as the SDK's user: its task stores are kept per user."""

    def __init__(self, scope: str) -> None:
        self.scope = scope

    @property
    def is_authenticated(self) -> bool:
        return False

    @property
    def user_name(self) -> str:
        return self.scope


class ScopedContextBuilder(DefaultServerCallContextBuilder):
    def build_user(self, request: Request) -> User:
        return ScopeUser(request.scope.get("state", {}).get(_SCOPE_STATE, SHARED_OWNER_SCOPE))


class ScopeResolver:
    """Resolves the owner scope (possibly awaiting it) before the SDK's synchronous
    context builder reads it."""

    def __init__(self, app: ASGIApp, owner_scope: OwnerScope | None) -> None:
        self.app = app
        self.owner_scope = owner_scope

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        owner = SHARED_OWNER_SCOPE
        if self.owner_scope is not None:
            resolved = self.owner_scope(Request(scope, receive))
            owner = await resolved if inspect.isawaitable(resolved) else resolved
        scope.setdefault("state", {})[_SCOPE_STATE] = owner
        await self.app(scope, receive, send)


class BodyLimit:
    """The server's body limit (LGOS_MAX_BODY_BYTES) on JSON-RPC bodies: a declared size over
    it is a 413 before anything is read; a body that grows past it while read is the SDK's
    "Payload too large" JSON-RPC error."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        declared = Request(scope).headers.get("content-length", "")
        if declared.isdigit() and int(declared) > self.max_bytes:
            body = {
                "jsonrpc": "2.0",
                "id": None,
                "error": {
                    "code": INVALID_REQUEST,
                    "message": f"The request body is larger than {self.max_bytes} bytes.",
                },
            }
            await JSONResponse(body, status_code=413)(scope, receive, send)
            return
        size = 0

        async def limited() -> Message:
            nonlocal size
            message = await receive()
            size += len(message.get("body", b""))
            if size > self.max_bytes:
                raise HTTPException(413)
            return message

        await self.app(scope, limited, send)


class CheckedContextBuilder(SimpleRequestContextBuilder):
    """Refuses a message the graph cannot take before any task exists for it, so bad input
    is a JSON-RPC error (-32602), not a failed task."""

    def __init__(self, model: str, config: GraphConfig, store: InMemoryTaskStore) -> None:
        super().__init__()
        self.model = model
        self.config = config
        self.store = store

    async def build(
        self,
        context: ServerCallContext,
        params: SendMessageRequest | None = None,
        task_id: str | None = None,
        context_id: str | None = None,
        task: Task | None = None,
    ) -> RequestContext:
        if params is not None:
            await self._check(params, task_id, context)
        return await super().build(context, params, task_id, context_id, task)

    async def _check(
        self, params: SendMessageRequest, task_id: str | None, context: ServerCallContext
    ) -> None:
        message = params.message
        if not message.parts:
            raise InvalidParamsError(message="The message has no parts.")
        if task_id:
            found = await self.store.get(task_id, context)
            if found is not None and found.status.state != TaskState.TASK_STATE_INPUT_REQUIRED:
                state = TaskState.Name(found.status.state).removeprefix("TASK_STATE_").lower()
                raise InvalidParamsError(
                    message=f"Task {task_id} is not waiting for input (it is {state})."
                )
            return  # an answer: checked against the question it answers
        try:
            decode_message(self.config, self.model, message)
        except LgosError as error:
            raise InvalidParamsError(message=error.message) from None


def _package_version() -> str:
    try:
        return metadata.version("lgos")
    except metadata.PackageNotFoundError:  # pragma: no cover - a source tree without install
        return "0.0.0"
