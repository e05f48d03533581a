"""What the compose stacks need before `up`, made while the rest of the test session runs.

Starting the Docker engine (scripts/setup-docker.sh), making the images (tests/compose/images.py:
pulled, or stand-ins built) and `compose build` of the stack's own images take minutes on a
fresh machine, and none of it needs the other tests. So when the selected tests include a
compose stack test and the compose tests are enabled (`LGOS_TEST_COMPOSE=1`), the end of
collection (tests/compose/conftest.py) starts a daemon thread that does all three for the
profiles those tests use; the `stack` fixtures wait for it (`ready`) within a deadline of their
own. `--collect-only`, `--setup-plan` and a run that selects no stack test start nothing.

pytest's terminal belongs to the main thread: what the thread (and the stand-ins' builds) log is
queued (tests/compose/stack.py, `emit`) and shown by the main thread, after each test and while a
fixture waits. A preparation that fails, or does not finish in time, fails the first stack test
with what it logged; the later ones are skipped pointing there (tests/support/started.py).
"""

from __future__ import annotations

import os
import queue
import tempfile
import threading
import time
from concurrent.futures import Future
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.support.started import StartFailure

from . import images
from . import stack as harness
from .stack import REPO, Stack, ensure_engine, log

# What needs the engine runs when asked for (its cold image builds take about 20 minutes).
OPTED_IN = os.environ.get("LGOS_TEST_COMPOSE") == "1"
NOT_OPTED_IN = "the compose stack runs with `just demo/test-compose` (LGOS_TEST_COMPOSE=1)"
FULL = os.environ.get("LGOS_COMPOSE_ALL") == "1"
UIS = ["chainlit", "openwebui", "openwebui-sync"]
# profile -> (compose profiles, services to start, extra variables). With --all the hatchet
# stack adds both UIs, and the dbos stack runs with the otel profile, API and worker exporting
# their traces to the collector.
PROFILES: dict[str, tuple[list[str], list[str], dict[str, str]]] = {
    "hatchet": (["hatchet"], ["api", "worker", "litellm", *(UIS if FULL else [])], {}),
    "dbos": (
        ["dbos", "otel"],
        ["api-dbos", "worker-dbos", "litellm", "otel-collector"],
        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel-collector:4318"},
    ),
}
# The stacks tests/compose/test_stack.py starts (its `stack` fixture's parameters).
STACK_PROFILES = ["hatchet", "dbos"] if FULL else ["hatchet"]
# How long a fixture waits for the preparation (counted from its own start; the preparation began
# earlier), and the bound on one `compose build`.
WAIT_DEADLINE = 3600.0
BUILD_TIMEOUT = 1800.0
WHAT = "the Docker engine and images of the compose tests"

images.log = lambda message: harness.emit(f"images: {message}")


@dataclass(frozen=True)
class Needs:
    """What the selected tests need prepared."""

    profiles: tuple[str, ...]  # the stacks of test_stack.py whose images to build
    template: bool  # test_template_stack.py's stacks (the engine and images only)

    @property
    def full(self) -> bool:
        """Images for `--all` (the UIs, the collector), which only the repo's stacks use."""
        return FULL and bool(self.profiles)


@dataclass(frozen=True)
class Prepared:
    host: str | None  # None: no engine answers (the stack tests skip, saying so)
    seconds: float  # how long the preparation took


finished: Future[Prepared] = Future()
_start = threading.Lock()
_started_at: float | None = None
_failure: StartFailure | None = None


def needs_of(items: list[pytest.Item]) -> Needs | None:
    """What the stack tests among `items` need; None when no stack test would start one."""
    if not OPTED_IN:
        return None
    here = Path(__file__).resolve().parent
    profiles: set[str] = set()
    template = False
    for item in items:
        if item.path.parent != here:
            continue
        names = getattr(item, "fixturenames", ())
        callspec = getattr(item, "callspec", None)
        if "stack" in names:
            profiles.add(str(callspec.params["stack"]) if callspec else STACK_PROFILES[0])
        if "template_stack" in names and FULL:  # it skips without --all
            template = True
    if not profiles and not template:
        return None
    return Needs(tuple(p for p in STACK_PROFILES if p in profiles), template)


def on_collection_finish(session: pytest.Session) -> None:
    """Start the preparation when the session is going to run a stack test."""
    options = session.config.option
    if options.collectonly or getattr(options, "setupplan", False):
        return
    needs = needs_of(session.items)
    if needs is None:
        return
    show_in_terminal(session.config)
    session.config.pluginmanager.register(ShowQueuedLines(), "compose-prepare-lines")
    start(needs)


def show_in_terminal(config: pytest.Config) -> None:
    """Lines of the harness go to the run's own output (a CI log shows them as they happen),
    past pytest's capture, which would show them only with a failing test."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    capture = config.pluginmanager.get_plugin("capturemanager")
    if reporter is None or capture is None:
        return

    def to_terminal(line: str) -> None:
        with capture.global_and_fixture_disabled():
            reporter.write_line(line)
            reporter.flush()

    harness.show = to_terminal


class ShowQueuedLines:
    """Shows what the preparation logged since the last test (after the terminal's own output
    for that test)."""

    @pytest.hookimpl(trylast=True)
    def pytest_runtest_logfinish(self) -> None:
        harness.flush()

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self) -> None:
        harness.flush()


def start(needs: Needs) -> None:
    """Start the preparation in a daemon thread (once per session)."""
    global _started_at
    with _start:
        if _started_at is not None:
            return
        _started_at = time.monotonic()
    wanted = ", ".join(needs.profiles) or "none"
    log(
        f"preparing the Docker engine and images while the session runs (stacks: {wanted}; "
        f"template: {'yes' if needs.template else 'no'})"
    )
    threading.Thread(target=_prepare, args=(needs,), name="compose-prepare", daemon=True).start()


def stack_of(profile: str, host: str, variables: dict[str, str], workdir: Path) -> Stack:
    """The compose project of test_stack.py's stack in `profile` (its builds are the same
    whoever asks: the preparation, then the fixture, which finds them built)."""
    profiles, services, settings = PROFILES[profile]
    return Stack(
        directory=REPO,
        profiles=profiles,
        services=services,
        workdir=workdir,
        variables={**variables, **settings},
        host=host,
    )


def _prepare(needs: Needs) -> None:
    try:
        prepared = _run(needs)
    except BaseException as error:  # images.py ends with SystemExit: still the thread's failure
        finished.set_exception(PreparationError(_describe(error)))
    else:
        finished.set_result(prepared)
    harness.pending.put(None)  # wakes a fixture waiting for a line


def _run(needs: Needs) -> Prepared:
    began = time.monotonic()
    host = ensure_engine()
    if host is None:
        log("no Docker engine answers: nothing to prepare")
        return Prepared(None, time.monotonic() - began)
    images.docker_host = host
    variables = images.ensure(full=needs.full)
    with tempfile.TemporaryDirectory(prefix="lgos-compose-prepare-") as workdir:
        for profile in needs.profiles:
            stack_of(profile, host, variables, Path(workdir)).build(BUILD_TIMEOUT)
    seconds = time.monotonic() - began
    log(f"the Docker engine and images are ready ({seconds:.0f} s)")
    return Prepared(host, seconds)


class PreparationError(Exception):
    """The preparation's error, with what it logged."""


def _describe(error: BaseException) -> str:
    text = f"{type(error).__name__}: {error}"
    for stream in ("stdout", "stderr"):  # a failed subprocess.run(check=True)'s output
        output = getattr(error, stream, None)
        if output:
            text += f"\n{stream}:\n{output if isinstance(output, str) else output.decode()}"
    return f"{text}\n\n{_logged()}"


def _logged() -> str:
    lines = harness.background_lines[-80:]
    return "what the preparation logged:\n" + ("\n".join(lines) if lines else "(nothing)")


def ready(deadline: float = WAIT_DEADLINE) -> Prepared | StartFailure:
    """The preparation's result once it finished, showing its lines meanwhile; its failure (or
    not finishing within `deadline`) as one StartFailure, the same for every fixture."""
    global _failure
    if _failure is not None:
        return _failure
    if _started_at is None:  # a stack fixture in a session that did not start one
        start(Needs(tuple(STACK_PROFILES), FULL))
    assert _started_at is not None
    began = time.monotonic()
    until = began + deadline
    while not finished.done():
        try:
            line = harness.pending.get(timeout=max(0.0, until - time.monotonic()))
        except queue.Empty:
            break
        if line is not None:
            harness.show(line)
    harness.flush()
    waited = time.monotonic() - began
    if not finished.done():
        detail = f"not ready {deadline:.0f} s after a stack test began waiting\n\n{_logged()}"
        _failure = StartFailure(WHAT, detail)
        return _failure
    error = finished.exception()
    if error is not None:
        _failure = StartFailure(WHAT, str(error))
        return _failure
    prepared = finished.result()
    since = began - _started_at
    log(
        f"waited {waited:.0f} s for the engine and images (preparing since the end of collection, "
        f"{since:.0f} s before; it took {prepared.seconds:.0f} s)"
    )
    return prepared
