"""The `/v1` routes. Plain Starlette routes: no dependency solving or body models per request,
because this code sits in front of every token a graph produces."""

from __future__ import annotations

import asyncio
import inspect
import logging
import re
import time
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version
from typing import Any

from pydantic_core import to_json
from starlette.requests import ClientDisconnect, Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from lgos.core import log_fields
from lgos.core.background import BackgroundBackend
from lgos.core.errors import (
    InvalidRequestError,
    LgosError,
    NotFoundError,
    PayloadTooLargeError,
    RequestTimeoutError,
)
from lgos.core.registry import GraphRegistry
from lgos.http.request_log import LoggedResponse
from lgos.http.streaming import EventStreamResponse
from lgos.service import chat, responses
from lgos.service.background import BackgroundResponses
from lgos.wire import chat_decoder, responses_decoder
from lgos.wire import models as models_wire
from lgos.wire.decoding import parse_json_object
from lgos.wire.error_envelope import SERVER_ERROR_MESSAGE, error_body

logger = logging.getLogger("lgos.http")

# Resolves the server-trusted owner of a request (the authenticated tenant, say).
OwnerScopeResolver = Callable[[Request], str | Awaitable[str]]
Endpoint = Callable[[Request], Awaitable[Response]]

_SANE_REQUEST_ID = re.compile(r"[\x21-\x7e]{1,128}")
# Frames wait this long for a run's first event before the stream is committed.
FIRST_EVENT_PATIENCE_SECONDS = 5.0


@dataclass(frozen=True, slots=True)
class RequestLimits:
    """What one request may send (ServerSettings.MAX_BODY_BYTES, BODY_TIMEOUT_SECONDS)."""

    max_body_bytes: int = 4 * 1024 * 1024
    body_timeout_seconds: float = 60.0


class ClientGoneError(LgosError):
    """The client hung up while sending its body: nobody will read the reply."""

    def __init__(self) -> None:
        super().__init__("The client closed the connection.", code="client_disconnected")


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
    if error.status_code in (408, 413):
        # The rest of the body may still be on its way: stop it by closing the connection.
        response.headers["connection"] = "close"
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


def guarded(endpoint: Endpoint, route: str, *, quiet: bool = False) -> Endpoint:
    """Request id, log fields, OpenAI error envelopes and the request's log record around one
    endpoint. A 500 never leaks internals: the details go to the log."""

    async def handle(request: Request) -> Response:
        started = time.perf_counter()
        request_id = _request_id(request)
        token = log_fields.bind(request_id=request_id)
        try:
            response = await endpoint(request)
        except LgosError as error:
            response = error_response(error)
        except Exception:
            logger.exception(
                "http.request.failed",
                extra={"http.request.method": request.method, "http.route": route},
            )
            response = server_error_response()
        finally:
            fields = log_fields.current()
            log_fields.reset(token)
        response.headers["x-request-id"] = request_id
        return LoggedResponse(  # type: ignore[return-value]
            response, fields, method=request.method, route=route, started=started, quiet=quiet
        )

    return handle


async def json_body(request: Request, limits: RequestLimits) -> dict[str, Any]:
    content_type = request.headers.get("content-type", "")
    if content_type.split(";", 1)[0].strip().lower() != "application/json":
        raise InvalidRequestError(
            "Invalid Content-Type header: send the request body as application/json.",
            code="invalid_content_type",
        )
    return parse_json_object(await read_body(request, limits))


async def read_body(request: Request, limits: RequestLimits) -> bytes:
    """The body, refused before it is buffered when it is larger than the limit (declared or
    actual) or slower than the body timeout."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limits.max_body_bytes:
        raise PayloadTooLargeError(limits.max_body_bytes)
    chunks: list[bytes] = []
    size = 0
    try:
        async with asyncio.timeout(limits.body_timeout_seconds):
            async for chunk in request.stream():
                size += len(chunk)
                if size > limits.max_body_bytes:
                    raise PayloadTooLargeError(limits.max_body_bytes)
                chunks.append(chunk)
    except TimeoutError:
        raise RequestTimeoutError(limits.body_timeout_seconds) from None
    except ClientDisconnect:
        logger.info("http.request.client_disconnected")
        raise ClientGoneError() from None
    return b"".join(chunks)


# The owner scope of every request when the host names none.
SHARED_OWNER_SCOPE = "default"


class OpenAIRoutes:
    """The handlers, bound to one registry, owner scope resolver and background engine."""

    def __init__(
        self,
        registry: GraphRegistry,
        owner_scope: OwnerScopeResolver | None,
        background: BackgroundBackend | None,
        ping_interval: float = 15.0,
        limits: RequestLimits | None = None,
    ) -> None:
        self.registry = registry
        self.limits = limits or RequestLimits()
        self.owner_scope = owner_scope
        self.ping_interval = ping_interval
        self.background = BackgroundResponses(registry, background)

    async def scope(self, request: Request) -> str:
        if self.owner_scope is None:
            return SHARED_OWNER_SCOPE
        scope = self.owner_scope(request)
        if inspect.isawaitable(scope):
            scope = await scope
        return scope

    def _send(self, result: dict[str, Any] | AsyncGenerator[bytes]) -> Response:
        if isinstance(result, dict):
            return JSON(result)
        # A client that leaves a background stream stops reading only: the run goes on.
        return EventStreamResponse(result, ping_interval=self.ping_interval)

    async def list_models(self, request: Request) -> Response:
        return JSON(models_wire.model_list(self.registry))

    async def get_model(self, request: Request) -> Response:
        model_id = request.path_params["model_id"]
        config = self.registry.get(model_id)
        return JSON(models_wire.model_object(model_id, config, detail=True))

    async def chat_completions(self, request: Request) -> Response:
        decoded = chat_decoder.decode(await json_body(request, self.limits))
        log_fields.add(model=decoded.body.model, stream=decoded.stream)
        scope = await self.scope(request)
        if decoded.stream:
            frames = await chat.open_stream(
                self.registry, decoded, scope=scope, patience=FIRST_EVENT_PATIENCE_SECONDS
            )
            return EventStreamResponse(frames, ping_interval=self.ping_interval)
        return JSON(await chat.create(self.registry, decoded, scope=scope))

    async def create_response(self, request: Request) -> Response:
        decoded = responses_decoder.decode(await json_body(request, self.limits))
        log_fields.add(
            model=decoded.body.model, stream=decoded.stream, background=decoded.background
        )
        if decoded.background:
            key = responses_decoder.idempotency_key(request.headers, decoded)
            scope = await self.scope(request)
            return self._send(
                await self.background.create(decoded, owner_scope=scope, idempotency_key=key)
            )
        prepared = responses.prepare(self.registry, decoded)
        log_fields.add(response_id=prepared.echo.id, run_id=prepared.plan.run_id)
        scope = await self.scope(request)
        if decoded.stream:
            frames = await responses.open_stream(
                self.registry, prepared, scope=scope, patience=FIRST_EVENT_PATIENCE_SECONDS
            )
            return EventStreamResponse(frames, ping_interval=self.ping_interval)
        return JSON(await responses.create(self.registry, prepared, scope=scope))

    async def retrieve_response(self, request: Request) -> Response:
        query = responses_decoder.decode_retrieve_query(request.query_params)
        result = await self.background.retrieve(
            request.path_params["response_id"],
            owner_scope=await self.scope(request),
            stream=query.stream,
            starting_after=query.starting_after,
        )
        return self._send(result)

    async def cancel_response(self, request: Request) -> Response:
        snapshot = await self.background.cancel(
            request.path_params["response_id"], owner_scope=await self.scope(request)
        )
        return JSON(snapshot)

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
            ("/responses/{response_id}", self.retrieve_response, ["GET"]),
            ("/responses/{response_id}/cancel", self.cancel_response, ["POST"]),
            ("/health", self.health, ["GET"]),
            ("/version", self.version, ["GET"]),
            ("/{path:path}", self.unknown_route, ["GET", "POST", "PUT", "PATCH", "DELETE"]),
        ]
        return [
            Route(
                prefix + path,
                guarded(endpoint, prefix + path, quiet=path == "/health"),
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
