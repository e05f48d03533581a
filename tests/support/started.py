"""Services a test session starts once, whose failure to start is reported once.

A session fixture that starts a slow service (Open WebUI, Chainlit, LiteLLM) runs inside the
setup of the first test that asks for it. Two things go wrong there on a busy machine: the
start counts against that test's timeout, and a failed start is cached by pytest and raised
again in every later test, so one slow start reads as N errors. Here the start has its own
deadline (the service's), the UI tests time only their own body (`func_only`), and a failed
start becomes a `StartFailure` value instead of an exception: the first test that needs the
service fails with the service's log, every later one is skipped with a pointer to it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import pytest

T = TypeVar("T")


@dataclass
class StartFailure:
    """A service that did not start: what it is, and what it printed."""

    what: str
    detail: str
    reported: bool = False


def start_once(what: str, start: Callable[[], T]) -> T | StartFailure:
    """`start()`, or the failure to start as a value (never raised, so never cached)."""
    try:
        return start()
    except Exception as error:  # a start that fails for any reason is reported the same way
        return StartFailure(what, f"{type(error).__name__}: {error}")


def require(started: T | StartFailure) -> T:
    """The started service; else fail the first test that needs it, skip the later ones."""
    if isinstance(started, StartFailure):
        if started.reported:
            pytest.skip(f"{started.what} did not start; the first test that needed it says why")
        started.reported = True
        pytest.fail(f"{started.what} did not start:\n{started.detail}", pytrace=False)
    return started
