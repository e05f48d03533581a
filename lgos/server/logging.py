"""Logging for `lgos serve` and `lgos worker`: JSON records on stdout, readable on a TTY.

Request fields reach records through a filter on the stdout handler, which mutates each record
in place: handlers attached to the root logger after it (the OTLP handler that
`opentelemetry-instrument` adds) see the fields too. Not a LogRecord factory: a factory would
stamp `model` before `extra=` is applied, and the standard library then raises KeyError for
any log call in a graph node that passes `extra={"model": ...}`.
"""

from __future__ import annotations

import json
import logging
import sys
import time
from datetime import UTC, datetime
from typing import Any

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


def _extras(fields: dict[str, object]) -> dict[str, object]:
    # `key[:1]`, not `key.startswith`: every record of every request passes here.
    return {key: value for key, value in fields.items() if key not in _STANDARD and key[:1] != "_"}


def _payload(
    created: float, level: str, logger: str, message: str, fields: dict[str, object]
) -> dict[str, object]:
    payload: dict[str, object] = {
        "timestamp": datetime.fromtimestamp(created, UTC).isoformat(),
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
    the line the filter and the formatter would make of the record, field for field."""

    def write_fields(
        self, level: int, logger: str, message: str, fields: dict[str, object]
    ) -> bool:
        if type(self.formatter) is not JSONFormatter or [type(each) for each in self.filters] != [
            RequestContextFilter
        ]:
            return False
        payload: dict[str, object] = {
            # `time.time()`, as a `LogRecord` reads it
            "timestamp": datetime.fromtimestamp(time.time(), UTC).isoformat(),
            "level": logging.getLevelName(level).lower(),
            "logger": logger,
            "message": message,
        }
        payload.update(fields)  # extras, named as `extra=` may name them
        # What `stamp` adds to a record holding `fields`, less what the formatter leaves out.
        for key, value in log_fields.current().items():
            if key not in fields and key not in _STANDARD and key[:1] != "_":
                payload[key] = value
        span_context = trace.get_current_span().get_span_context()
        if span_context.is_valid and "trace_id" not in payload:
            payload["trace_id"] = trace.format_trace_id(span_context.trace_id)
            payload["span_id"] = trace.format_span_id(span_context.span_id)
        line = _ENCODER.encode(payload)
        with self.lock:  # type: ignore[union-attr]  # created with the handler
            try:
                self.stream.write(line + self.terminator)
                self.flush()
            except RecursionError:
                raise
            except Exception:
                return False  # the ordinary path tries again and reports it
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
    extra_loggers: tuple[str, ...] = (), *, json_output: bool | None = None
) -> dict[str, Any]:  # dictConfig's own nested schema
    """A `logging.config.dictConfig` configuration (what `lgos serve` gives Uvicorn)."""
    if json_output is None:
        json_output = not sys.stdout.isatty()
    info_loggers = dict.fromkeys((*INFO_LOGGERS, *extra_loggers))
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
        "root": {"level": "WARNING", "handlers": ["stdout"]},
        "loggers": {
            name: {"level": "INFO", "handlers": [], "propagate": True} for name in info_loggers
        },
    }
