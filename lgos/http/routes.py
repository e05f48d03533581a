"""The `/v1` routes. Plain Starlette routes: no dependency solving or body models per request,
because this code sits in front of every token a graph produces."""

from __future__ import annotations

import inspect
import logging
import re
import uuid
from collections.abc import Awaitable, Callable
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from pydantic_core import to_json
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from lgos import context
from lgos.background.events import frame_event
from lgos.background.protocol import BackgroundBackend
from lgos.errors import LgosError, NotFoundError
from lgos.http.background import BackgroundRoutes
from lgos.http.body import json_body
from lgos.http.stateful import ConversationRoutes, StatefulRoutes
from lgos.http.streaming import EventStreamResponse
from lgos.registry import GraphRegistry
from lgos.service import chat, responses
from lgos.service.conversations import Conversations
from lgos.service.stateful import StatefulResponses
from lgos.stored import InMemoryResponseStore, ResponseStore
from lgos.wire import chat as chat_wire
from lgos.wire import models as models_wire
from lgos.wire import responses_request
from lgos.wire.errors import SERVER_ERROR_MESSAGE, error_body

logger = logging.getLogger("lgos.http")

ScopeResolver = Callable[[Request], str | Awaitable[str]]
Endpoint = Callable[[Request], Awaitable[Response]]

_SANE_REQUEST_ID = re.compile(r"[\x21-\x7e]{1,128}")
CONVERSATION_ITEM = "/conversations/{conversation_id}/items/{item_id}"
# Frames wait this long for a run's first event before the stream is committed.
FIRST_EVENT_PATIENCE_SECONDS = 5.0


class JSON(Response):
    """JSON rendered by pydantic-core: faster than the stdlib encoder on large Responses."""

    media_type = "application/json"

    def render(self, content: Any) -> bytes:
        return to_json(content)


def error_response(error: LgosError, headers: dict[str, str] | None = None) -> JSONResponse:
    response = JSONResponse(
        error_body(error.message, error_type=error.error_type, param=error.param, code=error.code),
        status_code=error.status_code,
        headers=headers,
    )
    if not error.retryable:
        # The SDKs retry 409 by default; our conflicts are final.
        response.headers["x-should-retry"] = "false"
    return response


def server_error_response() -> JSONResponse:
    return JSONResponse(
        error_body(SERVER_ERROR_MESSAGE, error_type="server_error", code="server_error"),
        status_code=500,
    )


def _request_id(request: Request) -> str:
    candidate = request.headers.get("x-request-id")
    if candidate and _SANE_REQUEST_ID.fullmatch(candidate):
        return candidate
    return uuid.uuid4().hex


def guarded(endpoint: Endpoint) -> Endpoint:
    """Request id, log fields, and OpenAI error envelopes around one endpoint. A 500 never
    leaks internals: the details go to the log."""

    async def handle(request: Request) -> Response:
        request_id = _request_id(request)
        token = context.bind(request_id=request_id)
        try:
            response = await endpoint(request)
        except LgosError as error:
            response = error_response(error)
        except Exception:
            logger.exception(
                "http.request.failed",
                extra={"http.request.method": request.method, "url.path": request.url.path},
            )
            response = server_error_response()
        finally:
            fields = context.current()
            context.reset(token)
        if isinstance(response, EventStreamResponse):
            response.headers.append((b"x-request-id", request_id.encode()))
            response.log_fields = fields
        else:
            response.headers["x-request-id"] = request_id
        return response

    return handle


class OpenAIRoutes:
    """The handlers, bound to one registry, scope resolver and background engine."""

    def __init__(
        self,
        registry: GraphRegistry,
        checkpoint_scope: ScopeResolver | None,
        background: BackgroundBackend | None,
        ping_interval: float = 15.0,
        store: ResponseStore | None = None,
        store_by_default: bool = True,
    ) -> None:
        self.registry = registry
        self.checkpoint_scope = checkpoint_scope
        self.ping_interval = ping_interval
        self.stateful = StatefulResponses(
            store if store is not None else InMemoryResponseStore(),
            registry,
            background,
            store_by_default=store_by_default,
        )
        self.background = BackgroundRoutes(
            registry, background, self.scope, ping_interval, stateful=self.stateful
        )
        self.stored = StatefulRoutes(self.stateful, self.background, self.scope, ping_interval)
        self.conversations = ConversationRoutes(Conversations(self.stateful, registry), self.scope)

    async def scope(self, request: Request) -> str:
        if self.checkpoint_scope is None:
            return "default"
        scope = self.checkpoint_scope(request)
        if inspect.isawaitable(scope):
            scope = await scope
        return scope

    async def list_models(self, request: Request) -> Response:
        return JSON(models_wire.model_list(self.registry))

    async def get_model(self, request: Request) -> Response:
        model_id = request.path_params["model_id"]
        config = self.registry.get(model_id)
        return JSON(models_wire.model_object(model_id, config, detail=True))

    async def chat_completions(self, request: Request) -> Response:
        decoded = chat_wire.decode(await json_body(request))
        context.add(model=decoded.body.model, stream=decoded.stream)
        scope = await self.scope(request)
        if decoded.stream:
            frames = await chat.open_stream(
                self.registry, decoded, scope=scope, patience=FIRST_EVENT_PATIENCE_SECONDS
            )
            return EventStreamResponse(frames, ping_interval=self.ping_interval)  # type: ignore[return-value]
        return JSON(await chat.create(self.registry, decoded, scope=scope))

    async def create_response(self, request: Request) -> Response:
        decoded = responses_request.decode(await json_body(request))
        context.add(model=decoded.body.model, stream=decoded.stream)
        if decoded.background:
            return await self.background.create(request, decoded)
        scope = await self.scope(request)
        decoded, turn = await self.stateful.resolve(decoded, scope)
        prepared = responses.prepare(self.registry, decoded, turn=turn)
        context.add(response_id=prepared.context.id, run_id=prepared.plan.run_id)
        if decoded.stream:
            frames = await responses.open_stream(
                self.registry,
                prepared,
                scope=scope,
                patience=FIRST_EVENT_PATIENCE_SECONDS,
                on_end=self._stream_end(prepared, scope),
            )
            return EventStreamResponse(frames, ping_interval=self.ping_interval)  # type: ignore[return-value]
        response, checkpoint_id = await responses.run(self.registry, prepared, scope=scope)
        await self.stateful.remember(prepared, scope, response, checkpoint_id=checkpoint_id)
        return JSON(response)

    def _stream_end(self, prepared: responses.PreparedResponse, scope: str) -> Any:
        turn = prepared.turn
        if not (turn.store or turn.conversation_id or prepared.plan.keep_thread):
            return None

        async def remember(frames: list[bytes], checkpoint_id: str | None) -> None:
            response = frame_event(frames[-1])["response"]
            await self.stateful.remember(
                prepared, scope, response, checkpoint_id=checkpoint_id, frames=frames
            )

        return remember

    async def health(self, request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    async def version(self, request: Request) -> Response:
        return JSONResponse({"version": package_version()})

    async def unknown_route(self, request: Request) -> Response:
        return error_response(NotFoundError(f"Invalid URL ({request.method} {request.url.path})"))

    def routes(self, prefix: str) -> list[BaseRoute]:
        table: list[tuple[str, Endpoint, list[str]]] = [
            ("/models", self.list_models, ["GET"]),
            ("/models/{model_id:path}", self.get_model, ["GET"]),
            ("/chat/completions", self.chat_completions, ["POST"]),
            ("/responses", self.create_response, ["POST"]),
            ("/responses/{response_id}", self.stored.retrieve, ["GET"]),
            ("/responses/{response_id}", self.stored.delete, ["DELETE"]),
            ("/responses/{response_id}/input_items", self.stored.input_items, ["GET"]),
            ("/responses/{response_id}/cancel", self.stored.cancel, ["POST"]),
            ("/conversations", self.conversations.create, ["POST"]),
            ("/conversations/{conversation_id}", self.conversations.retrieve, ["GET"]),
            ("/conversations/{conversation_id}", self.conversations.update, ["POST"]),
            ("/conversations/{conversation_id}", self.conversations.delete, ["DELETE"]),
            ("/conversations/{conversation_id}/items", self.conversations.list_items, ["GET"]),
            ("/conversations/{conversation_id}/items", self.conversations.add_items, ["POST"]),
            (
                "/conversations/{conversation_id}/items/{item_id}",
                self.conversations.get_item,
                ["GET"],
            ),
            (
                "/conversations/{conversation_id}/items/{item_id}",
                self.conversations.delete_item,
                ["DELETE"],
            ),
            ("/health", self.health, ["GET"]),
            ("/version", self.version, ["GET"]),
            ("/{path:path}", self.unknown_route, ["GET", "POST", "PUT", "PATCH", "DELETE"]),
        ]
        return [
            Route(prefix + path, guarded(endpoint), methods=methods, include_in_schema=False)
            for path, endpoint, methods in table
        ]


def package_version() -> str:
    try:
        return version("lgos")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.0.0"
