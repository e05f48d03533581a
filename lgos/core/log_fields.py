"""Request fields carried by every log record emitted while a request is handled.

A context variable (not a logger adapter) so records from graph nodes, which run in tasks
LangGraph creates, carry them too: tasks copy the context they were created in.

Also the contract of a handler that writes a request's own record without the logging
machinery (`FieldsHandler`, `sole_handler`): `lgos serve`'s handler is one.
"""

from __future__ import annotations

import logging
from contextvars import ContextVar, Token

# Values of any type a log record carries (the JSON formatter renders them).
_fields: ContextVar[dict[str, object] | None] = ContextVar("lgos_request_fields", default=None)


def bind(**fields: object) -> Token[dict[str, object] | None]:
    """Start a new set of request fields (returns the token to `reset` it)."""
    return _fields.set({key: value for key, value in fields.items() if value is not None})


def bind_request(request_id: str) -> Token[dict[str, object] | None]:
    """`bind(request_id=request_id)`, without the keyword dict and its filter: every request
    starts its fields so."""
    return _fields.set({"request_id": request_id})


def add(**fields: object) -> None:
    """Add fields to the current request's set (e.g. the response id once known)."""
    current = _fields.get()
    if current is not None:
        # A loop, not a filtered dict and `update`: the routes add two or three fields to
        # every request.
        for key, value in fields.items():
            if value is not None:
                current[key] = value


def reset(token: Token[dict[str, object] | None]) -> None:
    _fields.reset(token)


def current() -> dict[str, object]:
    return _fields.get() or {}


class FieldsHandler(logging.StreamHandler):  # type: ignore[type-arg]  # any text stream
    """A stream handler that can also write a record straight from its parts, without a
    `LogRecord` and the logging machinery around it: for the one record every request writes,
    where that machinery costs more than the rest of the record.

    `fields` are the record's extras, named as `extra=` may name them (no `LogRecord`
    attribute, no leading underscore), with values JSON writes as they are: strings,
    integers, booleans, None, and floats that are zero or between 1e-4 and 1e16 in magnitude
    (a handler may write them without checking). `write_fields` returns False when this
    handler cannot (its formatter or filters are not ones it can reproduce); the caller then
    logs the ordinary way.
    """

    def write_fields(
        self, level: int, logger: str, message: str, fields: dict[str, object]
    ) -> bool:
        return False


def sole_handler(logger: logging.Logger, level: int) -> logging.Handler | None:
    """The one handler a record of `logger` at `level` would reach, when it is the only handler
    on the way and no logger filter could change or drop the record; otherwise None. (What
    `Logger.handle` and `callHandlers` would do, read without making a record.)"""
    if logger.disabled or logger.filters:
        return None
    found: logging.Handler | None = None
    current: logging.Logger | None = logger
    while current is not None:
        for handler in current.handlers:
            if found is not None:
                return None
            found = handler
        current = current.parent if current.propagate else None
    if found is None or level < found.level:
        return None
    return found
