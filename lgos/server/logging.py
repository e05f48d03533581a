"""Logging for `lgos serve` and `lgos worker`: JSON records on stdout, readable on a TTY."""

from __future__ import annotations

import json
import logging
import sys
from datetime import UTC, datetime
from typing import Any

from lgos import context

# LogRecord attributes that are not user extras.
_STANDARD = set(vars(logging.makeLogRecord({}))) | {"message", "asctime", "color_message"}


class RequestContextFilter(logging.Filter):
    """Copies the current request's fields onto every record (graph nodes' records too)."""

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in context.current().items():
            if not hasattr(record, key):
                setattr(record, key, value)
        return True


class JSONFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "timestamp": datetime.fromtimestamp(record.created, UTC).isoformat(),
            "level": record.levelname.lower(),
            "logger": record.name,
            "message": record.getMessage(),
        }
        for key, value in vars(record).items():
            if key not in _STANDARD and not key.startswith("_"):
                payload[key] = value
        if record.exc_info:
            payload["exception"] = self.formatException(record.exc_info)
        return json.dumps(payload, default=str)


class ConsoleFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        extras = " ".join(
            f"{key}={value}"
            for key, value in vars(record).items()
            if key not in _STANDARD and not key.startswith("_")
        )
        time = datetime.fromtimestamp(record.created).strftime("%H:%M:%S")
        line = f"{time} {record.levelname:<7} {record.name}: {record.getMessage()}"
        if extras:
            line += f"  {extras}"
        if record.exc_info:
            line += "\n" + self.formatException(record.exc_info)
        return line


def logging_config(extra_loggers: tuple[str, ...] = ()) -> dict[str, Any]:
    formatter = "console" if sys.stdout.isatty() else "json"
    info_loggers = (
        "lgos",
        "uvicorn",
        "uvicorn.error",
        "uvicorn.access",
        "dbos",
        "hatchet_sdk",
        *extra_loggers,
    )
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
                "class": "logging.StreamHandler",
                "stream": "ext://sys.stdout",
                "formatter": formatter,
                "filters": ["request_context"],
            }
        },
        "root": {"level": "WARNING", "handlers": ["stdout"]},
        "loggers": {
            name: {"level": "INFO", "handlers": [], "propagate": True} for name in info_loggers
        },
    }
