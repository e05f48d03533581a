"""Reading a JSON request body, the same way and within the same limits on every route."""

from __future__ import annotations

import asyncio
import logging
import types
from collections.abc import Coroutine, Generator
from dataclasses import dataclass
from typing import Any, TypeVar

from starlette.requests import ClientDisconnect, Request

from lgos.core.errors import (
    InvalidRequestError,
    LgosError,
    PayloadTooLargeError,
    RequestTimeoutError,
)
from lgos.wire.decoding import parse_json_object

logger = logging.getLogger("lgos.http")

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class RequestLimits:
    """What one request may send (ServerSettings.MAX_BODY_BYTES, BODY_TIMEOUT_SECONDS)."""

    max_body_bytes: int = 4 * 1024 * 1024
    body_timeout_seconds: float = 60.0


class ClientGoneError(LgosError):
    """The client hung up while sending its body: nobody will read the reply."""

    def __init__(self) -> None:
        super().__init__("The client closed the connection.", code="client_disconnected")


# Untrusted client JSON: the decoders validate it (Pydantic) before anything reads it.
async def json_body(request: Request, limits: RequestLimits) -> dict[str, Any]:
    content_type = request.headers.get("content-type", "")
    # Nearly every client sends exactly this; any other form is parsed.
    if (
        content_type != "application/json"
        and content_type.split(";", 1)[0].strip().lower() != "application/json"
    ):
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
    try:
        return await _with_lazy_timeout(
            _read(request, limits.max_body_bytes), limits.body_timeout_seconds
        )
    except TimeoutError:
        raise RequestTimeoutError(limits.body_timeout_seconds) from None
    except ClientDisconnect:
        logger.info("http.request.client_disconnected")
        raise ClientGoneError() from None


async def _read(request: Request, max_bytes: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        if chunk:  # Starlette's stream ends with an empty chunk
            size += len(chunk)
            if size > max_bytes:
                raise PayloadTooLargeError(max_bytes)
            chunks.append(chunk)
    return b"".join(chunks)


async def _with_lazy_timeout(reading: Coroutine[Any, Any, T], seconds: float) -> T:
    """`await reading` within `seconds`, with the timer armed only once it has to wait. A body
    that arrived with the request's head (nearly every one) is read without ever waiting, so
    it costs no timer, which asyncio would otherwise schedule and cancel on every request."""
    try:
        waiting = reading.send(None)  # run it as far as it goes without waiting
    except StopIteration as done:
        return done.value  # type: ignore[no-any-return]
    async with asyncio.timeout(seconds):
        return await _resumed(reading, waiting)


@types.coroutine
def _resumed(reading: Coroutine[Any, Any, T], waiting: Any) -> Generator[Any, Any, T]:
    """The rest of `reading`, which has just yielded `waiting` to the event loop: what
    `yield from` does, entered after the first step."""
    while True:
        try:
            sent = yield waiting
        except BaseException as error:  # a cancellation (the timer's), handed on to `reading`
            try:
                waiting = reading.throw(error)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
        else:
            try:
                waiting = reading.send(sent)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
