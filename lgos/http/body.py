"""Reading a JSON request body, the same way on every route."""

from __future__ import annotations

from typing import Any

from starlette.requests import Request

from lgos.core.errors import InvalidRequestError
from lgos.wire.decoding import parse_json_object


async def json_body(request: Request) -> dict[str, Any]:
    content_type = request.headers.get("content-type", "")
    if content_type.split(";", 1)[0].strip().lower() != "application/json":
        raise InvalidRequestError(
            "Invalid Content-Type header: send the request body as application/json.",
            code="invalid_content_type",
        )
    return parse_json_object(await request.body())
