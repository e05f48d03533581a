"""One canonical log record per request, written when the response has been sent.

The response is sent with the request's fields bound, so every record emitted while it is sent
carries them: graph nodes that stream, and Uvicorn's access record (Uvicorn writes it inside
`send` of the response start). The record holds identifiers, flags and timings only, never
prompt or output text.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from starlette.responses import Response
from starlette.types import Message, Receive, Scope, Send

from lgos.core import log_fields

logger = logging.getLogger("lgos.http.request")


class LoggedResponse(Response):
    """`response` (the same status and headers: a Response to whatever handles it next), sent
    under the request's log fields, then the request's record."""

    def __init__(
        self,
        response: Response,
        fields: dict[str, Any],  # the request's log fields, values of any type
        *,
        method: str,
        route: str,
        started: float,
        quiet: bool = False,  # a probe's route: DEBUG, so probes do not drown the traffic
    ) -> None:
        # Starlette's constructor would render a body; this one shares the wrapped reply's.
        self.status_code = response.status_code
        self.raw_headers = response.raw_headers
        self.background = None
        self._response = response
        self._fields = fields
        self._method = method
        self._route = route
        self._started = started
        self._quiet = quiet

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        status = 500  # if sending fails before the response starts

        async def observed(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        token = log_fields.bind(**self._fields)
        try:
            await self._response(scope, receive, observed)
        finally:
            self._log(status)
            log_fields.reset(token)

    def _log(self, status: int) -> None:
        level = logging.ERROR if status >= 500 else logging.INFO
        if self._quiet:
            level = logging.DEBUG
        if not logger.isEnabledFor(level):
            return
        # What `logger.log` does, less the stack walk that finds the caller: it is always this
        # line (a walk per request through the ASGI stack, for a record of fixed origin).
        record = logger.makeRecord(
            logger.name,
            level,
            __file__,
            _LINE,
            "http.request",
            (),
            None,
            "_log",
            {
                "http.request.method": self._method,
                "http.route": self._route,
                "http.response.status_code": status,
                "duration_ms": round((time.perf_counter() - self._started) * 1000, 1),
            },
        )
        logger.handle(record)


_LINE = LoggedResponse._log.__code__.co_firstlineno
