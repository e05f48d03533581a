"""The OpenAI error envelope."""

from __future__ import annotations

from typing import Any


def error_body(
    message: str, *, error_type: str, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}


SERVER_ERROR_MESSAGE = "The server had an error while processing your request."
