"""The `/v1` routes. Plain Starlette routes: no dependency solving or body models per request,
because this code sits in front of every token a graph produces."""

from __future__ import annotations

import functools
import logging
import re
import time
from collections.abc import Awaitable, Callable, Mapping
from importlib.metadata import PackageNotFoundError, version

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route
from starlette.types import Receive, Scope, Send

from lgos.core import log_fields
from lgos.core.background import TERMINAL_EVENTS, BackgroundBackend
from lgos.core.errors import (
    DatabaseUnavailableError,
    LgosError,
    is_transient_database_error,
)
from lgos.core.registry import GraphRegistry
from lgos.core.stored import ResponseStore
from lgos.core.stored_memory import InMemoryResponseStore
from lgos.http.auth import (
    SHARED_OWNER_SCOPE,
    Authenticate,
    OwnerScopeResolver,
    authenticate_into_scope,
    owner_of,
)
from lgos.http.body import RequestLimits, json_body
from lgos.http.errors import lgos_error_response, not_found_response, server_error_response
from lgos.http.headers import IndexedRequest
from lgos.http.rendering import JSON, AnswerJSON
from lgos.http.request_log import STARTS_AT_ONCE, log_request, send_logged
from lgos.http.sse import DONE, data_event, named_event
from lgos.http.stateful import ConversationRoutes, StatefulRoutes
from lgos.http.streaming import EventStreamResponse
from lgos.service import chat, responses
from lgos.service.background import BackgroundResponses
from lgos.service.conversations import Conversations
from lgos.service.idempotency import Answer, Idempotency
from lgos.service.retrieval import ResponseRetrieval
from lgos.service.stateful import StatefulResponses
from lgos.wire import chat_decoder, decoding, ids, responses_decoder
from lgos.wire import models as models_wire
from lgos.wire.types.events import StreamEvent

logger = logging.getLogger("lgos.http")

__all__ = ["SHARED_OWNER_SCOPE", "OpenAIRoutes", "OwnerScopeResolver"]

Endpoint = Callable[[Request], Awaitable[Response]]

_SANE_REQUEST_ID = re.compile(r"[\x21-\x7e]{1,128}")
CONVERSATION_ITEM = "/conversations/{conversation_id}/items/{item_id}"
# Frames wait this long for a run's first event before the stream is committed.
FIRST_EVENT_PATIENCE_SECONDS = 5.0


def _request_id(request: Request) -> str:
    candidate = request.headers.get("x-request-id")  # most clients send none
    if candidate and _SANE_REQUEST_ID.fullmatch(candidate):
        return candidate
    return ids.new_hex()


class Guarded:
    """The ASGI app of one route: request id, log fields, OpenAI error envelopes and the
    request's log record around `endpoint`. A 500 never leaks internals: the details go to
    the log. An ASGI app rather than a Starlette endpoint, so that the record is written once
    the response is sent without a second response object and send wrapper per request."""

    __slots__ = ("authenticate", "endpoint", "quiet", "route")

    def __init__(
        self,
        endpoint: Endpoint,
        route: str,
        *,
        quiet: bool = False,
        authenticate: Authenticate | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.route = route
        self.quiet = quiet
        self.authenticate = authenticate  # None: a public route

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        started = time.perf_counter()
        request = IndexedRequest(scope, receive, send)
        request_id = _request_id(request)
        token = log_fields.bind_request(request_id)
        try:
            try:
                if self.authenticate is not None:
                    # Before the body is read: a stranger's request costs a header's worth.
                    await authenticate_into_scope(self.authenticate, request)
                response = await self.endpoint(request)
            except LgosError as error:
                response = lgos_error_response(error)
            except Exception as error:
                if is_transient_database_error(error):
                    # No connection within the pool's wait: the database is away. The outage
                    # is logged once by the pool's watch, not once per request.
                    response = lgos_error_response(DatabaseUnavailableError())
                else:
                    logger.exception(
                        "http.request.failed",
                        extra={"http.request.method": request.method, "http.route": self.route},
                    )
                    response = server_error_response()
            # Appended to the reply's own header list (no endpoint sets this header): the
            # `headers` view would be built and searched for it on every request.
            response.raw_headers.append((b"x-request-id", request_id.encode("latin-1")))
            if type(response).__call__ in STARTS_AT_ONCE:
                # `send_logged`, without its coroutine: the status is the response's own.
                status = response.status_code
                try:
                    await response(scope, receive, send)
                finally:
                    log_request(scope["method"], self.route, status, started, self.quiet)
            else:
                await send_logged(
                    response,
                    scope,
                    receive,
                    send,
                    route=self.route,
                    started=started,
                    quiet=self.quiet,
                )
        finally:
            log_fields.reset(token)


class OpenAIRoutes:
    """The handlers, bound to one registry, authentication hook and background engine.

    `authenticate` (None: everyone is the shared owner) runs before every route but the health
    check, and the model listing and version too when `public_models`.
    """

    def __init__(
        self,
        registry: GraphRegistry,
        authenticate: Authenticate | None,
        background: BackgroundBackend | None,
        ping_interval: float = 15.0,
        store: ResponseStore | None = None,
        store_by_default: bool = True,
        limits: RequestLimits | None = None,
        idempotency: Idempotency | None = None,
        *,
        public_models: bool = False,
    ) -> None:
        self.registry = registry
        self.authenticate = authenticate
        self.public = {"/health"} | (
            {"/models", "/models/{model_id:path}", "/version"} if public_models else set()
        )
        self.idempotency = idempotency or Idempotency()
        self.limits = limits or RequestLimits()
        self.ping_interval = ping_interval
        self.stateful = StatefulResponses(
            store if store is not None else InMemoryResponseStore(),
            registry,
            background,
            store_by_default=store_by_default,
        )
        self.background = BackgroundResponses(registry, background, stateful=self.stateful)
        self.stored = StatefulRoutes(
            self.stateful,
            ResponseRetrieval(self.stateful, self.background),
            self.scope,
            ping_interval,
        )
        self.conversations = ConversationRoutes(
            Conversations(self.stateful, registry), self.scope, self.limits, self.idempotency
        )

    async def scope(self, request: Request) -> str:
        return owner_of(request)

    async def list_models(self, request: Request) -> Response:
        return JSON(models_wire.model_list(self.registry))

    async def get_model(self, request: Request) -> Response:
        model_id = request.path_params["model_id"]
        config = self.registry.get(model_id)
        return JSON(models_wire.model_object(model_id, config, detail=True))

    async def chat_completions(self, request: Request) -> Response:
        body = await json_body(request, self.limits)
        decoded = chat_decoder.decode(body)
        log_fields.add(model=decoded.body.model, stream=decoded.stream)
        scope = await self.scope(request)
        key = decoding.idempotency_key(request.headers)
        answer = await self.idempotency.once(
            scope, key, ("chat.completions", body), self._chat_answer(decoded, scope)
        )
        if isinstance(answer, Mapping):
            return AnswerJSON(answer)
        return EventStreamResponse(answer, data_event, last=DONE, ping_interval=self.ping_interval)

    def _chat_answer(
        self, decoded: chat_decoder.DecodedChatRequest, scope: str
    ) -> Callable[[], Awaitable[Answer]]:
        # The service's own coroutine, through a `partial`: a coroutine of ours around it would
        # sit in the chain each of the run's suspensions passes through, and a lambda would be
        # one Python call more.
        if decoded.stream:
            return functools.partial(
                chat.open_stream,
                self.registry,
                decoded,
                scope=scope,
                patience=FIRST_EVENT_PATIENCE_SECONDS,
            )
        return functools.partial(chat.create, self.registry, decoded, scope=scope)

    async def create_response(self, request: Request) -> Response:
        body = await json_body(request, self.limits)
        decoded = responses_decoder.decode(body)
        log_fields.add(
            model=decoded.body.model, stream=decoded.stream, background=decoded.background
        )
        key = responses_decoder.idempotency_key(request.headers, decoded)
        scope = await self.scope(request)
        if decoded.background:
            if not decoded.stream:
                return AnswerJSON(
                    await self.background.create(decoded, owner_scope=scope, idempotency_key=key)
                )
            queued = await self.background.create_stream(
                decoded, owner_scope=scope, idempotency_key=key
            )
            # A client that leaves a background stream stops reading only: the run goes on.
            return EventStreamResponse(queued, named_event, ping_interval=self.ping_interval)
        answer = await self.idempotency.once(
            scope,
            key,
            ("responses", body),
            functools.partial(self._foreground_answer, decoded, scope),
        )
        if isinstance(answer, Mapping):
            return AnswerJSON(answer)
        return EventStreamResponse(answer, named_event, ping_interval=self.ping_interval)

    async def _foreground_answer(
        self, decoded: responses_decoder.DecodedResponsesRequest, scope: str
    ) -> Answer:
        decoded, turn = await self.stateful.resolve(decoded, scope)
        prepared = responses.prepare(self.registry, decoded, turn=turn)
        log_fields.add(response_id=prepared.echo.id, run_id=prepared.plan.run_id)
        if decoded.stream:
            return await responses.open_stream(
                self.registry,
                prepared,
                scope=scope,
                patience=FIRST_EVENT_PATIENCE_SECONDS,
                on_end=self._stream_end(prepared, scope),
            )
        response, checkpoint_id = await responses.run(self.registry, prepared, scope=scope)
        await self.stateful.remember(prepared, scope, response, checkpoint_id=checkpoint_id)
        return response

    def _stream_end(
        self, prepared: responses.PreparedResponse, scope: str
    ) -> responses.StreamEnd | None:
        turn = prepared.turn
        if not (turn.store or turn.conversation_id or prepared.plan.keep_thread):
            return None

        async def remember(events: list[StreamEvent], checkpoint_id: str | None) -> None:
            ended = events[-1]
            assert ended["type"] in TERMINAL_EVENTS  # a stream ends with its terminal event
            await self.stateful.remember(
                prepared, scope, ended["response"], checkpoint_id=checkpoint_id, events=events
            )

        return remember

    async def health(self, request: Request) -> Response:
        return JSON({"status": "ok"})

    async def version(self, request: Request) -> Response:
        return JSON({"version": package_version()})

    async def unknown_route(self, request: Request) -> Response:
        return not_found_response(request, code=None)

    def routes(self, prefix: str) -> list[BaseRoute]:
        # The router tries routes in order: the two that carry the traffic come first. The
        # catch-all stays last (`LanggraphOpenaiServe` puts MCP and A2A just before it).
        table: list[tuple[str, Endpoint, list[str]]] = [
            ("/chat/completions", self.chat_completions, ["POST"]),
            ("/responses", self.create_response, ["POST"]),
            ("/models", self.list_models, ["GET"]),
            ("/models/{model_id:path}", self.get_model, ["GET"]),
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
            (CONVERSATION_ITEM, self.conversations.get_item, ["GET"]),
            (CONVERSATION_ITEM, self.conversations.delete_item, ["DELETE"]),
            ("/health", self.health, ["GET"]),
            ("/version", self.version, ["GET"]),
            ("/{path:path}", self.unknown_route, ["GET", "POST", "PUT", "PATCH", "DELETE"]),
        ]
        return [
            Route(
                prefix + path,
                Guarded(
                    endpoint,
                    prefix + path,
                    quiet=path == "/health",
                    authenticate=None if path in self.public else self.authenticate,
                ),
                methods=methods,
                include_in_schema=False,
            )
            for path, endpoint, methods in table
        ]


def package_version() -> str:
    try:
        return version("lgos")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0.0.0"
