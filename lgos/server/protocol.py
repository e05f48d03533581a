"""Uvicorn's httptools protocol with the limits a public HTTP server needs.

Uvicorn's httptools parser accepts headers of any size (eight 50 MB headers took a server to
487 MB and 16 s of CPU) and waits forever for a socket that never sends its request, so idle
sockets pile up until the file-descriptor limit refuses everyone. This protocol, which
`lgos serve` selects with `--http lgos.server.protocol:LimitedHttpToolsProtocol` unless told
otherwise:

- answers 431 once a request's head (request line and headers) passes
  `LGOS_MAX_HEADER_BYTES`, before the parser has buffered more than that plus one read;
- answers 408 and closes when a request's head is not complete within
  `LGOS_HEADER_TIMEOUT_SECONDS` of the connection opening (or of the request's first byte on
  a kept-alive connection);
- sends Uvicorn's own 400 for unparseable requests in the OpenAI error envelope;
- closes "lingering" when it answers before the request's body (or head) has fully arrived, as
  after a 413: it half-closes, discards what the client still sends for a few seconds, then
  closes. Closing at once with unread data makes the kernel send a reset, and the client
  loses the reply it was about to read.
"""

from __future__ import annotations

import asyncio
import logging
from functools import cache
from typing import Any

from lgos.http.errors import error_reply
from lgos.server.settings import ServerSettings
from lgos.server.uvicorn_internals import HttpToolsProtocol

logger = logging.getLogger("lgos.http")

# Lingering close: discard late bytes until the client goes quiet for this long, at most
# LINGER_MAX_SECONDS in all (nginx's lingering_timeout and lingering_time, scaled down).
LINGER_QUIET_SECONDS = 2.0
LINGER_MAX_SECONDS = 10.0


@cache
def _limits() -> tuple[int, float]:
    settings = ServerSettings.from_environment()
    return settings.MAX_HEADER_BYTES, settings.HEADER_TIMEOUT_SECONDS


class _LingeringTransport:
    """The connection's transport as Uvicorn sees it: `close()` lingers while the client may
    still be sending (see LimitedHttpToolsProtocol)."""

    def __init__(self, transport: asyncio.Transport, protocol: LimitedHttpToolsProtocol) -> None:
        self._transport = transport
        self._protocol = protocol

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)

    def close(self) -> None:
        self._protocol.close_lingering()


class LimitedHttpToolsProtocol(HttpToolsProtocol):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.max_header_bytes, self.header_timeout = _limits()
        self._awaiting_head = True
        self._head_bytes = 0
        self._head_timer: asyncio.TimerHandle | None = None
        self._body_pending = False
        self._real_transport: asyncio.Transport | None = None
        self._linger_timer: asyncio.TimerHandle | None = None
        self._linger_deadline = 0.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._real_transport = transport
        super().connection_made(_LingeringTransport(transport, self))  # type: ignore[arg-type]
        self._arm_head_timer()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        if self._linger_timer is not None:
            self._linger_timer.cancel()
            self._linger_timer = None
        super().connection_lost(exc)

    def close_lingering(self) -> None:
        transport = self._real_transport
        assert transport is not None
        if transport.is_closing() or self._linger_timer is not None:
            return
        if not (self._awaiting_head or self._body_pending) or not transport.can_write_eof():
            transport.close()
            return
        # Our reply is written; say we are done and let the client finish talking.
        transport.write_eof()
        transport.resume_reading()
        self._linger_deadline = self.loop.time() + LINGER_MAX_SECONDS
        self._linger_timer = self.loop.call_later(LINGER_QUIET_SECONDS, transport.close)

    def data_received(self, data: bytes) -> None:
        if self._linger_timer is not None:
            assert self._real_transport is not None
            # Discarded unread; the client goes quiet or runs out of time.
            self._linger_timer.cancel()
            delay = min(LINGER_QUIET_SECONDS, max(0.0, self._linger_deadline - self.loop.time()))
            self._linger_timer = self.loop.call_later(delay, self._real_transport.close)
            return
        if self._awaiting_head:
            self._head_bytes += len(data)
        super().data_received(data)
        if self._awaiting_head and self._head_bytes > self.max_header_bytes:
            self._reject(
                431,
                f"The request's headers are larger than this server accepts "
                f"({self.max_header_bytes} bytes).",
                "request_headers_too_large",
            )

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._awaiting_head = True
        self._head_bytes = 0
        if self._head_timer is None:
            self._arm_head_timer()

    def on_headers_complete(self) -> None:
        self._awaiting_head = False
        self._body_pending = True
        self._disarm_head_timer()
        super().on_headers_complete()

    def on_message_complete(self) -> None:
        self._body_pending = False
        super().on_message_complete()

    def on_response_complete(self) -> None:
        # Between requests Uvicorn's keep-alive timeout applies; the head timer restarts with
        # the next request's first byte.
        self._awaiting_head = False
        super().on_response_complete()

    def send_400_response(self, msg: str) -> None:
        self._reject(400, "The server could not parse the HTTP request.", "invalid_http_request")

    def _arm_head_timer(self) -> None:
        self._head_timer = self.loop.call_later(self.header_timeout, self._head_timed_out)

    def _disarm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if self._awaiting_head and not self.transport.is_closing():
            self._reject(
                408,
                f"The request's headers did not arrive within {self.header_timeout:g} seconds.",
                "request_timeout",
            )

    def _reject(self, status: int, message: str, code: str) -> None:
        self._disarm_head_timer()
        if self.transport.is_closing() or self._linger_timer is not None:
            return
        logger.info("http.connection.rejected", extra={"http.response.status_code": status})
        self.transport.write(error_reply(status, message, code))
        # The rest of the head (and a body) may still be coming: linger, then close.
        self._awaiting_head = True
        self.close_lingering()
