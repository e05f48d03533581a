"""The OpenAI error envelope."""

from __future__ import annotations

from typing import TypedDict

from lgos.core.errors import SERVER_ERROR_MESSAGE

__all__ = ["SERVER_ERROR_MESSAGE", "ErrorEnvelope", "ErrorObject", "error_body"]


class ErrorObject(TypedDict):
    message: str
    type: str
    param: str | None
    code: str | None


class ErrorEnvelope(TypedDict):
    error: ErrorObject


def error_body(
    message: str, *, error_type: str, param: str | None = None, code: str | None = None
) -> ErrorEnvelope:
    return {"error": {"message": message, "type": error_type, "param": param, "code": code}}
