"""Logging for `lgos serve` and `lgos worker`: JSON records on stdout, readable on a TTY.

Request fields reach records through a filter on the stdout handler, which mutates each record
in place: handlers attached to the root logger after it (the OTLP handler that
`opentelemetry-instrument` adds) see the fields too. Not a LogRecord factory: a factory would
stamp `model` before `extra=` is applied, and the standard library then raises KeyError for
any log call in a graph node that passes `extra={"model": ...}`.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sys
import time
import weakref
from datetime import UTC, datetime
from threading import get_ident, main_thread
from typing import Any

import orjson
from opentelemetry import context as otel_context
from opentelemetry import trace

from lgos.core import log_fields

# One encoder for every record: `json.dumps(..., default=str)` builds a new one per call, and
# every request writes a record. The output is the same.
_ENCODER = json.JSONEncoder(default=str)
# LogRecord attributes that are not user extras.
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "color_message"}
# Loggers shown at INFO besides the registry's own package; everything else at WARNING.
INFO_LOGGERS = ("lgos", "uvicorn", "uvicorn.error", "uvicorn.access", "dbos", "hatchet")


class RequestContextFilter(logging.Filter):
    """Copies the current request's fields (and the trace ids) onto every record; a value the
    log call passed itself wins."""

    def filter(self, record: logging.LogRecord) -> bool:
        stamp(record.__dict__)
        return True


def stamp(fields: dict[str, object]) -> None:
    """Add the current request's fields and trace ids to `fields` (a record's attributes)."""
    for key, value in log_fields.current().items():
        if key not in fields:
            fields[key] = value
    span_context = trace.get_current_span().get_span_context()
    if span_context.is_valid and "trace_id" not in fields:
        fields["trace_id"] = trace.format_trace_id(span_context.trace_id)
        fields["span_id"] = trace.format_span_id(span_context.span_id)


# The last second a record was stamped in and its ISO text less the offset, as one tuple:
# records of threads (sync nodes) read and replace it together.
_second: tuple[float, str] = (-1.0, "")


def iso_timestamp(created: float) -> str:
    """`datetime.fromtimestamp(created, UTC).isoformat()`, character for character, with the
    date and time of day formatted once per second: `isoformat` alone cost about 12k CPU
    instructions per record, and every request writes one (docs/benchmarks.md, 2026-12-05,
    second round). `created` is a positive `time.time()`."""
    global _second
    whole = float(int(created))
    # Microseconds as `fromtimestamp` rounds them (half to even, carried into the second).
    micro = round((created - whole) * 1e6)
    if micro >= 1_000_000:
        whole += 1.0
        micro -= 1_000_000
    start, text = _second
    if whole != start:
        # A whole second: `isoformat` leaves the microseconds out, added below instead.
        text = datetime.fromtimestamp(whole, UTC).isoformat()[: -len("+00:00")]
        _second = (whole, text)
    if micro:
        return "%s.%06d+00:00" % (text, micro)  # noqa: UP031  # cheaper than an f-string
    return text + "+00:00"


# Value types orjson writes as the standard library's encoder does (floats: see `_line`).
_PLAIN = frozenset({str, int, bool, type(None)})


def _line(payload: dict[str, object]) -> str:
    """`_ENCODER.encode(payload)` for a flat `payload`, character for character: written by
    orjson when that gives the same line, which the request's record nearly always does (about
    9k CPU instructions against the standard library's 39k for its 11 fields, per request).

    orjson writes the same text for strings, integers and floats between 1e-4 and 1e16
    (shorter exponents outside): anything else goes to the standard library.
    """
    for value in payload.values():
        if type(value) is float:
            if value == 0.0 or 1e-4 <= abs(value) < 1e16:
                continue
            return _ENCODER.encode(payload)
        if type(value) not in _PLAIN:
            return _ENCODER.encode(payload)
    if len(payload) == 0:
        return _ENCODER.encode(payload)
    return _plain_line(payload)


def _plain_line(payload: dict[str, object]) -> str:
    """`_line` of a non-empty `payload` whose values are known to be strings, integers,
    booleans, None or floats orjson writes as the standard library does.

    orjson writes no `", "` and `": "` separators, so it writes the indented form, whose only
    line breaks are the separators' (a string's line break is escaped), and they are put back
    as the standard library writes them. Non-ASCII text (which orjson writes unescaped) and
    what orjson refuses go to the standard library.
    """
    try:
        indented = orjson.dumps(payload, option=orjson.OPT_INDENT_2)
    except orjson.JSONEncodeError:  # an integer past 64 bits, a key that is not a string
        return _ENCODER.encode(payload)
    if not indented.isascii():
        return _ENCODER.encode(payload)
    # b'{\n  "a": 1,\n  "b": 2\n}' -> '{"a": 1, "b": 2}'
    return "{" + indented[4:-2].decode("ascii").replace(",\n  ", ", ") + "}"


def _extras(fields: dict[str, object]) -> dict[str, object]:
    # `key[:1]`, not `key.startswith`: every record of every request passes here.
    return {key: value for key, value in fields.items() if key not in _STANDARD and key[:1] != "_"}


def _payload(
    created: float, level: str, logger: str, message: str, fields: dict[str, object]
) -> dict[str, object]:
    payload: dict[str, object] = {
        "timestamp": iso_timestamp(created),
        "level": level.lower(),
        "logger": logger,
        "message": message,
    }
    payload.update(_extras(fields))
    return payload


class JSONFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload = _payload(
            record.created, record.levelname, record.name, record.getMessage(), vars(record)
        )
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        return _ENCODER.encode(payload)


class StdoutHandler(log_fields.FieldsHandler):
    """`lgos serve`'s handler: a `StreamHandler` that writes a request's record directly when
    it is configured as `logging_config` configures it (JSON, through `RequestContextFilter`):
    the line the filter and the formatter would make of the record, field for field.

    The requests' own INFO records (`write_fields`) on the main thread's event loop are held
    and written together within `flush_seconds`: one write for many requests' records, not one
    each (the write cost 18-33 µs of CPU per request in a server taking one request at a time,
    docs/benchmarks.md, 2026-12-07). Every other record is written at once, after the held
    ones, as are a request's WARNING or ERROR record, one from another thread or from outside
    a loop, a full hold, `flush()` and `close()` (so exit, through `logging.shutdown`): stdout
    keeps the records' order. `flush_seconds` 0 holds nothing. A process killed outright loses
    what it held: at most `flush_seconds` of request records.
    """

    MAX_HELD = 512  # lines: a burst of records is written at once past this

    def __init__(self, stream: Any = None, flush_seconds: float = 0.1) -> None:
        super().__init__(stream)
        self.flush_seconds = flush_seconds
        self._held: list[str] = []
        # The loop a flush of the held lines is scheduled on (None: none is).
        self._flush_loop: asyncio.AbstractEventLoop | None = None
        _HOLDING.add(self)

    def emit(self, record: logging.LogRecord) -> None:
        # `StreamHandler.emit`, writing through `_write` (the caller holds the lock).
        try:
            line = self.format(record)
            self._write(line + self.terminator, hold=False)
        except RecursionError:
            raise
        except Exception:
            self.handleError(record)

    def flush(self) -> None:
        with self.lock:  # type: ignore[union-attr]  # created with the handler
            self._flush_loop = None
            if self._held:
                self.stream.write("".join(self._held))
                self._held.clear()
            super().flush()

    def _write(self, text: str, *, hold: bool) -> None:
        """Write `text` (whole lines) after what is held, or, with `hold`, hold it for a flush
        if it can be; the caller holds the lock."""
        # Held only on the main thread's loop (Uvicorn's), which runs the flush it schedules;
        # a loop in another thread may end before it would.
        if hold and self.flush_seconds > 0 and get_ident() == _MAIN_THREAD:
            try:
                loop = asyncio.get_running_loop()
            except RuntimeError:  # no loop (yet, or any more)
                loop = None
            if loop is not None and len(self._held) < self.MAX_HELD:
                self._held.append(text)
                if self._flush_loop is not loop:  # none scheduled, or on a loop now gone
                    self._flush_loop = loop
                    loop.call_later(self.flush_seconds, self.flush)
                return
        if self._held:
            text = "".join(self._held) + text
        stream = self.stream
        stream.write(text)
        self._held.clear()  # after the write: a failed one keeps them for the next
        if hasattr(stream, "flush"):
            stream.flush()

    def write_fields(
        self, level: int, logger: str, message: str, fields: dict[str, object]
    ) -> bool:
        filters = self.filters
        if (
            type(self.formatter) is not JSONFormatter
            or len(filters) != 1
            or type(filters[0]) is not RequestContextFilter
        ):
            return False
        current = log_fields.current()
        head: dict[str, object] = {
            # `time.time()`, as a `LogRecord` reads it
            "timestamp": iso_timestamp(time.time()),
            "level": logging.getLevelName(level).lower(),
            "logger": logger,
            "message": message,
        }
        # What `stamp` adds to a record holding `fields` (extras, named as `extra=` may name
        # them), less what the formatter leaves out: the request's fields that `fields` does not
        # set. When every one of their names is one a record keeps (nearly always), one dict
        # display does it: `fields` again after them puts their values back over the request's
        # for the names both hold, where `fields` first placed them.
        if current.keys() <= _KEPT_NAMES or _keeps_every_name(current):
            payload = {**head, **fields, **current, **fields}
        else:
            payload = {**head, **fields}
            for key, value in current.items():
                if key not in fields and key not in _STANDARD and key[:1] != "_":
                    payload[key] = value
        # Asking OpenTelemetry for the span walks four functions; a context with nothing in it
        # (no instrumentation, no span) has none to stamp.
        context = otel_context.get_current()
        if context:
            span_context = trace.get_current_span(context).get_span_context()
            if span_context.is_valid and "trace_id" not in payload:
                payload["trace_id"] = trace.format_trace_id(span_context.trace_id)
                payload["span_id"] = trace.format_span_id(span_context.span_id)
        # `fields`, the head and the trace ids are plain by the contract and construction: only
        # the request's fields (any value `log_fields.add` was given) need checking. (A loop:
        # `_PLAIN.issuperset(map(type, ...))` runs fewer bytecodes but took 10 to 20 % longer
        # over three to six values, in a timeit.)
        for value in current.values():
            if type(value) not in _PLAIN:
                line = _line(payload)
                break
        else:
            line = _plain_line(payload)
        with self.lock:  # type: ignore[union-attr]  # created with the handler
            try:
                self._write(line + self.terminator, hold=level <= logging.INFO)
            except RecursionError:
                raise
            except Exception:
                return False  # the ordinary path tries again and reports it
        return True


_MAIN_THREAD = main_thread().ident
_HOLDING: weakref.WeakSet[StdoutHandler] = weakref.WeakSet()


def _forget_held_records() -> None:
    """In a forked child (Hatchet's action listener, a fork-started process): the records its
    parent held are the parent's to write, not the child's to write again. (Its main thread
    is the thread that forked.)"""
    global _MAIN_THREAD
    _MAIN_THREAD = main_thread().ident
    for handler in _HOLDING:
        handler._held = []
        handler._flush_loop = None


os.register_at_fork(after_in_child=_forget_held_records)


# Names of request fields seen that a record keeps (neither `LogRecord` attributes nor
# private): `write_fields` checks a request's names against them at C speed. Bounded, in case
# a graph binds names without end.
_KEPT_NAMES: set[str] = set()
_MAX_KEPT_NAMES = 1024


def _keeps_every_name(fields: dict[str, object]) -> bool:
    """Whether the formatter keeps every name in `fields`; if so, they are remembered."""
    for key in fields:
        if key in _STANDARD or key[:1] == "_":
            return False
    if len(_KEPT_NAMES) < _MAX_KEPT_NAMES:
        _KEPT_NAMES.update(fields)
    return True


class ConsoleFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        extras = " ".join(f"{key}={value}" for key, value in _extras(vars(record)).items())
        time = datetime.fromtimestamp(record.created).strftime("%H:%M:%S")
        line = f"{time} {record.levelname:<7} {record.name}: {record.getMessage()}"
        if extras:
            line += f"  {extras}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def registry_package(registry: str | None) -> str | None:
    """The top-level package of `module:attribute` (its loggers are shown at INFO)."""
    if not registry:
        return None
    return registry.partition(":")[0].split(".")[0] or None


def logging_config(
    extra_loggers: tuple[str, ...] = (),
    *,
    json_output: bool | None = None,
    level: str = "INFO",
) -> dict[str, Any]:  # dictConfig's own nested schema
    """A `logging.config.dictConfig` configuration (what `lgos serve` gives Uvicorn).

    `level` (`lgos serve --log-level`, a level name) is the level of the loggers LGOS shows:
    its own, Uvicorn's, the engines' and `extra_loggers` (the registry's package). Every other
    library is shown from WARNING, or from `level` when that is higher.
    """
    if json_output is None:
        json_output = not sys.stdout.isatty()
    info_loggers = dict.fromkeys((*INFO_LOGGERS, *extra_loggers))
    root_level = level if level in ("ERROR", "CRITICAL") else "WARNING"
    return {
        "version": 1,
        "disable_existing_loggers": False,
        "filters": {"request_context": {"()": RequestContextFilter}},
        "formatters": {
            "json": {"()": JSONFormatter},
            "console": {"()": ConsoleFormatter},
        },
        "handlers": {
            "stdout": {
                "class": "lgos.server.logging.StdoutHandler",
                "stream": "ext://sys.stdout",
                "formatter": "json" if json_output else "console",
                "filters": ["request_context"],
            }
        },
        # Handlers only on the root, so Uvicorn's loggers propagate to it (and to any handler
        # OpenTelemetry adds there) instead of writing through handlers of their own.
        "root": {"level": root_level, "handlers": ["stdout"]},
        "loggers": {
            name: {"level": level, "handlers": [], "propagate": True} for name in info_loggers
        },
    }
