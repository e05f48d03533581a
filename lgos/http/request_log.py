"""One canonical log record per request, written when the response has been sent.

The response is sent with the request's fields bound, so every record emitted while it is sent
carries them: graph nodes that stream, and Uvicorn's access record (Uvicorn writes it inside
`send` of the response start). The record holds identifiers, flags and timings only, never
prompt or output text.
"""

from __future__ import annotations

import logging
import time

from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from lgos.core import log_fields
from lgos.http.streaming import EventStreamResponse

logger = logging.getLogger("lgos.http.request")
MESSAGE = "http.request"


async def send_logged(
    response: Response,
    scope: Scope,
    receive: Receive,
    send: Send,
    *,
    route: str,
    started: float,
    quiet: bool = False,  # a probe's route: DEBUG, so probes do not drown the traffic
) -> None:
    """Send `response`, then write the request's record (status 500 if sending failed before
    the response started). The caller keeps the request's log fields bound meanwhile."""
    status = 500

    async def observed(message: Message) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        await send(message)

    try:
        await response(scope, receive, observed)
    finally:
        log_request(scope["method"], route, status, started, quiet)


# The `__call__` of responses that send the start, with `status_code`, before anything that
# could fail (Starlette's plain ones, JSON included, and LGOS's event streams): for them the
# caller knows the status `send_logged` would see, and needs no send wrapper (a closure and a
# call per message, on every request) but only `log_request` once the response is sent.
STARTS_AT_ONCE = frozenset({Response.__call__, EventStreamResponse.__call__})


def log_request(method: str, route: str, status: int, started: float, quiet: bool) -> None:
    """Write the request's record (the caller keeps its log fields bound)."""
    level = logging.DEBUG if quiet else logging.ERROR if status >= 500 else logging.INFO
    if not logger.isEnabledFor(level):
        return
    # Plain values, as `FieldsHandler.write_fields` takes them: the duration is zero or at
    # least 0.1 (a monotonic clock).
    fields: dict[str, object] = {
        "http.request.method": method,
        "http.route": route,
        "http.response.status_code": status,
        "duration_ms": round((time.perf_counter() - started) * 1000, 1),
    }
    # `lgos serve`'s handler alone writes it directly; any other set-up (a handler OpenTelemetry
    # added, a test's capture, a host's own configuration) gets the record the ordinary way.
    handler = log_fields.sole_handler(logger, level)
    if isinstance(handler, log_fields.FieldsHandler) and handler.write_fields(
        level, logger.name, MESSAGE, fields
    ):
        return
    # What `logger.log` does, less the stack walk that finds the caller: it is always this
    # function (a walk through the ASGI stack per request, for a record of fixed origin).
    record = logger.makeRecord(
        logger.name, level, __file__, _LINE, MESSAGE, (), None, "log_request", fields
    )
    logger.handle(record)


_LINE = log_request.__code__.co_firstlineno
