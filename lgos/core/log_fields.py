"""Request fields carried by every log record emitted while a request is handled.

A context variable (not a logger adapter) so records from graph nodes, which run in tasks
LangGraph creates, carry them too: tasks copy the context they were created in.
"""

from __future__ import annotations

from contextvars import ContextVar, Token

# Values of any type a log record carries (the JSON formatter renders them).
_fields: ContextVar[dict[str, object] | None] = ContextVar("lgos_request_fields", default=None)


def bind(**fields: object) -> Token[dict[str, object] | None]:
    """Start a new set of request fields (returns the token to `reset` it)."""
    return _fields.set({key: value for key, value in fields.items() if value is not None})


def add(**fields: object) -> None:
    """Add fields to the current request's set (e.g. the response id once known)."""
    current = _fields.get()
    if current is not None:
        current.update({key: value for key, value in fields.items() if value is not None})


def reset(token: Token[dict[str, object] | None]) -> None:
    _fields.reset(token)


def current() -> dict[str, object]:
    return _fields.get() or {}
