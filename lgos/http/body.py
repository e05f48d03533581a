"""Reading a JSON request body, the same way and within the same limits on every route."""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass
from typing import Any

from starlette.requests import ClientDisconnect, Request

from lgos.core.errors import (
    InvalidRequestError,
    LgosError,
    PayloadTooLargeError,
    RequestTimeoutError,
)
from lgos.wire.decoding import parse_json_object

logger = logging.getLogger("lgos.http")


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
