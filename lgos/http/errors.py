"""The OpenAI error envelope for replies that no LGOS route produced.

Unknown paths, a method a route does not take (OPTIONS included), FastAPI's own validation
and an unhandled exception in a host route would otherwise answer `{"detail": ...}` or plain
text, which OpenAI clients cannot show. `create_app` installs these handlers; an application
that mounts the routes itself may call `install_error_envelopes` too.
`error_reply` is the same envelope as a complete raw HTTP reply, for the connection-level
refusals of `lgos.server.protocol`, which happen before any route runs.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI
from fastapi.exceptions import RequestValidationError
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response

from lgos.core.errors import (
    DatabaseUnavailableError,
    LgosError,
    NotFoundError,
    ServiceUnavailableError,
    is_transient_database_error,
)
from lgos.http.rendering import JSON
from lgos.wire.error_envelope import SERVER_ERROR_MESSAGE, error_body

logger = logging.getLogger("lgos.http")

_CODES = {
    400: "invalid_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    413: "request_too_large",
    415: "invalid_content_type",
}


def error_response(
    status: int,
    message: str,
    *,
    error_type: str | None = None,
    param: str | None = None,
    code: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> Response:
    """The one builder of an OpenAI error reply (a route's error, a framework's, a 500)."""
    if error_type is None:
        error_type = "server_error" if status >= 500 else "invalid_request_error"
    return JSON(
        error_body(message, error_type=error_type, param=param, code=code),
        status_code=status,
        headers=headers,
    )


def lgos_error_response(error: LgosError) -> Response:
    response = error_response(
        error.status_code,
        error.message,
        error_type=error.error_type,
        param=error.param,
        code=error.code,
    )
    if not error.retryable:
        # The SDKs retry 409 by default; our conflicts are final.
        response.headers["x-should-retry"] = "false"
    if isinstance(error, ServiceUnavailableError):
        response.headers["retry-after"] = str(error.retry_after_seconds)
    if error.status_code in (408, 413):
        # The rest of the body may still be on its way: stop it by closing the connection.
        response.headers["connection"] = "close"
    return response


def server_error_response() -> Response:
    return error_response(500, SERVER_ERROR_MESSAGE, code="server_error")


def not_found_response(request: Request, code: str | None = "not_found") -> Response:
    """The one 404 of an unknown path, whether the API's catch-all route or the host's router
    answers it. Under the API's prefix the code is null, as OpenAI's own unknown paths say."""
    message = f"Invalid URL ({request.method} {request.url.path})"
    return lgos_error_response(NotFoundError(message, code=code))


_REASONS = {400: b"Bad Request", 408: b"Request Timeout", 431: b"Request Header Fields Too Large"}


def error_reply(status: int, message: str, code: str) -> bytes:
    """A complete HTTP/1.1 reply carrying the envelope, closing the connection."""
    body = json.dumps(error_body(message, error_type="invalid_request_error", code=code)).encode()
    head = (
        b"HTTP/1.1 %d %s\r\n" % (status, _REASONS[status])
        + b"content-type: application/json\r\n"
        + b"content-length: %d\r\n" % len(body)
        + b"connection: close\r\n\r\n"
    )
    return head + body


async def _http_exception(request: Request, error: Exception) -> Response:
    assert isinstance(error, HTTPException)
    if error.status_code == 404:
        return not_found_response(request)
    if error.status_code == 405:
        message = f"Method {request.method} is not allowed on {request.url.path}."
    else:
        message = str(error.detail)
    status = error.status_code
    code = _CODES.get(status, "server_error" if status >= 500 else "invalid_request")
    return error_response(status, message, code=code, headers=error.headers)


async def _validation_error(request: Request, error: Exception) -> Response:
    """FastAPI's 422 for a host route's parameters, as OpenAI's 400 naming the field."""
    assert isinstance(error, RequestValidationError)
    first: dict[str, Any] = next(iter(error.errors()), {})  # FastAPI's untyped error detail
    param = ".".join(str(part) for part in first.get("loc", ())[1:]) or None
    detail = first.get("msg", "invalid value")
    message = f"Invalid '{param}': {detail}" if param else f"Invalid request: {detail}"
    return error_response(400, message, param=param, code="invalid_value")


async def _unhandled(request: Request, error: Exception) -> Response:
    if is_transient_database_error(error):
        return lgos_error_response(DatabaseUnavailableError())
    # Starlette logs the traceback itself (ServerErrorMiddleware re-raises after this reply).
    return server_error_response()


def install_error_envelopes(app: FastAPI) -> None:
    app.add_exception_handler(HTTPException, _http_exception)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(Exception, _unhandled)
