"""A database outage, seen by one process: noticed once, waited out by a probe, logged in
bounded records, and over the moment PostgreSQL accepts connections again.

While PostgreSQL is away every part of a process fails on its own: requests wait for the pool,
the pool retries each lost connection with a growing back-off (1 s, 2 s, 4 s ... so service came
back up to 13 s after the database did), DBOS retries each of its statements in each of its
threads and says so every time (~37 warnings a second per worker). The watch replaces all of
that with one view:

- the pool gives up reconnecting after `POOL_RECONNECT_SECONDS` and tells the watch
  (`reconnect_failed`); a warning about a lost connection, from any logger, tells it too;
- the watch tries one connection at once: if it connects, the failure was a blip (dead
  connections are refilled, and what was held back is counted in `postgres.connections_lost`,
  at most once per `SUMMARY_SECONDS`); otherwise it logs `postgres.unavailable` once, then
  tries one connection every `PROBE_SECONDS`, logging `postgres.still_unavailable` every
  `SUMMARY_SECONDS`;
- the first probe that connects refills the pool (psycopg_pool's `check()`, which grows a pool
  that gave its connections up) and logs `postgres.available`, with how long the outage lasted
  and how many records it held back;
- meanwhile `OutageLogFilter`, on the process's log handlers, holds back every warning that only
  says the database is away, and counts it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

from lgos.core.errors import is_transient_database_error
from lgos.integrations.postgres.pool import accepts_connections

logger = logging.getLogger("lgos.postgres")

# The pool stops retrying a lost connection after this long: the watch's probe takes over.
POOL_RECONNECT_SECONDS = 1.0
PROBE_SECONDS = 0.2
SUMMARY_SECONDS = 10.0

# What a lost connection looks like in the records of the libraries under LGOS, which log the
# error's text, not the exception: DBOS's retry loop, psycopg_pool's reconnection.
_OUTAGE_TEXT = (
    "Database connection failed",
    "error connecting in",
    "discarding broken connection",
    "discarding closed connection",
    "reconnection attempt in pool",
    "connection is lost",
    "server closed the connection",
    "Connection refused",
    "the database system is",
    "terminating connection due to administrator command",
)
# `error.type` of LGOS's own warnings about a failed database call.
_OUTAGE_ERROR_TYPES = frozenset(
    {"OperationalError", "PoolTimeout", "ConnectionTimeout", "InterfaceError"}
)


class DatabaseWatch:
    """One process's view of whether its database is reachable (see the module's docstring).

    `lost()` may be called from any thread (DBOS's, the heartbeat's, a log filter's).
    """

    def __init__(
        self, uri: str, refill: Callable[[], Awaitable[None]], *, name: str = "lgos"
    ) -> None:
        self.uri = uri
        self._refill = refill
        self.name = name
        self._loop: asyncio.AbstractEventLoop | None = None
        self._noticed: asyncio.Event | None = None
        self._lock = threading.Lock()
        self._held_back = 0
        # When (monotonic) the last blip's held-back records were reported.
        self._blip_reported_at = -SUMMARY_SECONDS

    def lost(self) -> None:
        """Something failed for want of the database: check, and watch it until it is back."""
        loop, noticed = self._loop, self._noticed
        if loop is None or noticed is None or loop.is_closed():
            return
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
            loop.call_soon_threadsafe(noticed.set)

    def held_back(self) -> None:
        with self._lock:
            self._held_back += 1

    def _take_held_back(self) -> int:
        with self._lock:
            count, self._held_back = self._held_back, 0
            return count

    async def run(self) -> None:
        """The watch, for the life of the pool."""
        self._loop = asyncio.get_running_loop()
        self._noticed = asyncio.Event()
        while True:
            await self._noticed.wait()
            self._noticed.clear()
            if await self._probe():
                # A blip (a connection killed, a restart shorter than a probe): refill what the
                # pool gave up; say what was held back, at most once per summary interval.
                await self._refill()
                self._report_blip()
                continue
            await self._outage()

    def _report_blip(self) -> None:
        now = time.monotonic()
        if now - self._blip_reported_at < SUMMARY_SECONDS:
            return
        held_back = self._take_held_back()
        if held_back:
            self._blip_reported_at = now
            logger.warning(
                "postgres.connections_lost",
                extra={"pool": self.name, "records_held_back": held_back},
            )

    async def _outage(self) -> None:
        started = time.monotonic()
        logger.warning(
            "postgres.unavailable",
            extra={"pool": self.name, "detail": "requests needing it answer 503 until it is back"},
        )
        summary_at = started + SUMMARY_SECONDS
        while not await self._probe():
            await asyncio.sleep(PROBE_SECONDS)
            if time.monotonic() >= summary_at:
                summary_at += SUMMARY_SECONDS
                logger.warning(
                    "postgres.still_unavailable",
                    extra={
                        "pool": self.name,
                        "outage_seconds": round(time.monotonic() - started, 1),
                        "records_held_back": self._take_held_back(),
                    },
                )
        await self._refill()
        logger.warning(
            "postgres.available",
            extra={
                "pool": self.name,
                "outage_seconds": round(time.monotonic() - started, 1),
                "records_held_back": self._take_held_back(),
            },
        )
        # Records held back in the moment before the probe connected would start a new
        # outage at once: forget that they said so.
        if self._noticed is not None:
            self._noticed.clear()

    async def _probe(self) -> bool:
        return await accepts_connections(self.uri)


class OutageLogFilter(logging.Filter):
    """Holds back, and counts, the warnings that only say the database is away, and tells the
    watch about them. Everything else passes."""

    def __init__(self, watch: DatabaseWatch) -> None:
        super().__init__()
        self.watch = watch

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno < logging.WARNING or not _says_database_is_away(record):
            return True
        self.watch.lost()
        self.watch.held_back()
        return False


def _says_database_is_away(record: logging.LogRecord) -> bool:
    if record.exc_info and record.exc_info[1] is not None:
        return is_transient_database_error(record.exc_info[1])
    if getattr(record, "error.type", None) in _OUTAGE_ERROR_TYPES:
        return True
    if record.name.startswith(("dbos", "psycopg", "sqlalchemy")):
        text = record.getMessage()
        return any(fragment in text for fragment in _OUTAGE_TEXT)
    return False


@contextmanager
def outage_logging(watch: DatabaseWatch) -> Iterator[None]:
    """The filter on every handler of the root logger (where LGOS, DBOS, psycopg and Uvicorn
    records end), for the block."""
    log_filter = OutageLogFilter(watch)
    handlers = list(logging.getLogger().handlers)
    for handler in handlers:
        handler.addFilter(log_filter)
    try:
        yield
    finally:
        for handler in handlers:
            handler.removeFilter(log_filter)
