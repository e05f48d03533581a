"""The OpenAI error envelope."""

from __future__ import annotations

from typing import Any

from lgos.core.errors import SERVER_ERROR_MESSAGE

__all__ = ["SERVER_ERROR_MESSAGE", "error_body"]


def error_body(
    message: str, *, error_type: str, param: str | None = None, code: str | None = None
) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}
