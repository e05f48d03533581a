"""Deployments with completion webhooks, and the receiver process the tests read them from.

The receiver is a real HTTP server in its own process (`tests.webhooks.receiver`) on a
loopback port the API and the workers are configured with (`LGOS_WEBHOOKS`); a test may start
it late (the receiver is down) and stop it. Events are verified with the official SDK's
`client.webhooks.unwrap`, as a user's receiver would.
"""

from __future__ import annotations

import base64
import json
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from openai import OpenAI

from tests.background.conftest import Deployment, running
from tests.support.postgres import temporary_database
from tests.support.processes import START_TIMEOUT, Process, free_port

SECRET = "whsec_" + base64.b64encode(b"lgos-webhook-test-secret-32bytes").decode()
WRONG_SECRET = "whsec_" + base64.b64encode(b"not-the-secret-the-api-signs-with").decode()
ALL_TYPES = [
    "response.completed",
    "response.failed",
    "response.cancelled",
    "response.incomplete",
    "lgos.response.paused",
]
DELIVERY_TIMEOUT = 120.0
# Short back-off, so a test whose receiver was down does not wait for the production bound.
RETRY_ENV = {"LGOS_WEBHOOK_FIRST_DELAY_SECONDS": "0.5", "LGOS_WEBHOOK_MAX_DELAY_SECONDS": "2"}


class Receiver:
    """The receiver process on one port: (re)started and stopped by the test."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.url = f"http://127.0.0.1:{port}/hooks"
        self.process: Process | None = None
        # Requests of earlier incarnations of the process (a test that restarts it).
        self._earlier: list[dict[str, Any]] = []

    def start(self) -> None:
        self.process = Process(
            [sys.executable, "-m", "tests.webhooks.receiver", str(self.port)],
            env={"PYTHONUNBUFFERED": "1", "PATH": ""},
            name="webhook receiver",
        )
        self.process.wait_for_record(lambda r: r["message"] == "listening", START_TIMEOUT)

    def stop(self) -> None:
        if self.process is not None:
            self.process.stop(grace=5)
            self._earlier += self._received(self.process)
            self.process = None

    @staticmethod
    def _received(process: Process) -> list[dict[str, Any]]:
        return [r for r in process.records() if r["message"] == "received"]

    def received(self) -> list[dict[str, Any]]:
        current = self._received(self.process) if self.process is not None else []
        return [*self._earlier, *current]

    def for_response(self, response_id: str) -> list[dict[str, Any]]:
        return [r for r in self.received() if json.loads(r["body"])["data"]["id"] == response_id]

    def wait_for(self, response_id: str, count: int = 1) -> list[dict[str, Any]]:
        """The requests about this Response, once at least `count` arrived."""
        assert self.process is not None
        self.process.wait_for(
            lambda: len(self.for_response(response_id)) >= count,
            DELIVERY_TIMEOUT,
            f"{count} webhook(s) for {response_id}",
        )
        return self.for_response(response_id)

    def wait_for_each(self, response_ids: set[str]) -> list[dict[str, Any]]:
        """Every request received, once each of these Responses has at least one. A sender's
        log can show a delivery before this process's output reader has the receiver's line
        of it (the receiver prints before it answers, but the test reads the line from a pipe
        on a thread of its own), so a test counts requests only after waiting here."""
        assert self.process is not None

        def covered() -> list[dict[str, Any]] | None:
            received = self.received()
            got = {json.loads(request["body"])["data"]["id"] for request in received}
            return received if response_ids <= got else None

        return self.process.wait_for(  # type: ignore[no-any-return]
            covered, DELIVERY_TIMEOUT, f"webhooks for {len(response_ids)} Responses"
        )


def unwrap(request: dict[str, Any], secret: str = SECRET) -> Any:
    """The event, verified as the SDK verifies OpenAI's (raises on a bad signature)."""
    return OpenAI(api_key="unused").webhooks.unwrap(
        request["body"], request["headers"], secret=secret
    )


def webhook_env(receiver: Receiver, events: list[str] = ALL_TYPES) -> dict[str, str]:
    endpoints = [{"url": receiver.url, "secret": SECRET, "events": events}]
    return {"LGOS_WEBHOOKS": json.dumps(endpoints), **RETRY_ENV}


def is_attempt(response_id: str, *, failed: bool) -> Any:
    def match(record: dict[str, Any]) -> bool:
        if record.get("message") != "webhook.attempt" or record.get("response_id") != response_id:
            return False
        status = record.get("http.response.status_code")
        ok = isinstance(status, int) and 200 <= status < 300
        return ok != failed

    return match


@pytest.fixture(scope="package")
def webhooks_database() -> Iterator[str]:
    with temporary_database("lgos_test_webhooks") as uri:
        yield uri


@dataclass
class Shared:
    """The package's deployment of one engine, and the port it sends its webhooks to."""

    deployment: Deployment
    port: int


def _shared(engine: str, database: str, request: pytest.FixtureRequest) -> Iterator[Shared]:
    """One API, and one worker on an engine that has workers, sending to a port of its own."""
    port = free_port()
    extra = webhook_env(Receiver(port))
    if engine == "hatchet":
        extra.update(request.getfixturevalue("hatchet_engine"))
    workers = 0 if engine == "memory" else 1
    with running(Deployment(engine, database, apis=1, workers=workers, extra_env=extra)) as up:
        yield Shared(up, port)


# One deployment per engine for the package: no test needs a fresh one. Each test counts only
# its own Responses' records, and `hooked` restarts what a test killed.
@pytest.fixture(scope="package")
def memory_webhooks(webhooks_database: str, request: pytest.FixtureRequest) -> Iterator[Shared]:
    yield from _shared("memory", webhooks_database, request)


@pytest.fixture(scope="package")
def dbos_webhooks(webhooks_database: str, request: pytest.FixtureRequest) -> Iterator[Shared]:
    yield from _shared("dbos", webhooks_database, request)


@pytest.fixture(scope="package")
def hatchet_webhooks(webhooks_database: str, request: pytest.FixtureRequest) -> Iterator[Shared]:
    yield from _shared("hatchet", webhooks_database, request)


@dataclass
class Hooked:
    """A running deployment of the test's `engine`, and a receiver on the port it sends to
    (not started: the test starts it when it wants it up; stopped after the test)."""

    deployment: Deployment
    receiver: Receiver


@pytest.fixture
async def hooked(engine: str, request: pytest.FixtureRequest) -> AsyncIterator[Hooked]:
    shared: Shared = request.getfixturevalue(f"{engine}_webhooks")
    shared.deployment.ensure_running()
    receiver = Receiver(shared.port)
    try:
        yield Hooked(shared.deployment, receiver)
    finally:
        receiver.stop()
        await shared.deployment.close_clients()
