"""Services a test session starts once, whose failure to start is reported once.

pytest caches a package or session fixture's error and raises that same exception object
again in the set-up of every later test that uses the fixture, so one service that did not
start reads as N errors with N copies of its log. `report_once` (tests/conftest.py calls it
for every test's set-up and body report) keeps the first as the error it is, with its
traceback and the service's log, and turns each repeat into a skip that names the test that
reported it: the run stays red, and its log shows the failure once.

The start itself must not count against the first test's timeout, or a slow start is reported
as that test's timeout instead of the service's own deadline with its log: the modules whose
fixtures start services time only their tests' bodies (`func_only`), and every start helper
has a deadline of its own (tests/support/processes.py, tests/support/hatchet.py).

`start_once` and `require` are the UI fixtures' older way to the same end: a failed start
becomes a `StartFailure` value instead of an exception; the first test that needs the service
fails with its log, every later one is skipped with a pointer to it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

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


# The set-up errors reported so far: the error itself (kept, so its id stays its own) and the
# test that reported it.
_reported: dict[int, tuple[BaseException, str]] = {}


def report_once(item: pytest.Item, call: pytest.CallInfo[Any], report: pytest.TestReport) -> None:
    """Make a set-up error that an earlier test reported already a skip that points to it.

    The body counts too: a test that asks for a fixture there (`request.getfixturevalue`) gets
    the same cached error. An error a test raises itself is a new object every time."""
    if call.when == "teardown" or call.excinfo is None or report.outcome != "failed":
        return
    error = call.excinfo.value
    first = _reported.setdefault(id(error), (error, item.nodeid))[1]
    if first == item.nodeid:
        return
    lines = str(error).strip().splitlines() or [""]
    path, line = item.reportinfo()[:2]
    report.outcome = "skipped"
    report.longrepr = (
        str(path),
        (line or 0) + 1,
        f"Skipped: the set-up it needs failed in {first}, reported there with its log "
        f"({type(error).__name__}: {lines[0][:120]})",
    )
