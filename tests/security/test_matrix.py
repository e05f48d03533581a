"""The security matrix, generated from the app's own route table: every route × who asks (no
key, a wrong key, each of two owners' keys) × whose objects it names (each owner's, unknown
ones) → the exact status and envelope, on in-memory and PostgreSQL persistence, background
runs in the API process, on DBOS and on Hatchet (a real `lgos worker`).

Another owner's object must be answered exactly as an unknown one, body included once the ids
are out (no existence oracle). A route missing from `matrix.EXPECTATIONS` fails the test. The
JSON log records of the whole run and every reply are then searched for the keys and the
owners, which must appear in none.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import httpx2
import pytest
from fastapi import FastAPI
from pydantic import SecretStr
from starlette.routing import Route

from lgos import ServerSettings, create_app
from lgos.server.logging import JSONFormatter, RequestContextFilter
from tests.security.matrix import (
    NO_KEY_REFUSAL,
    WRONG_KEY_REFUSAL,
    Case,
    Owned,
    bearer,
    create_objects,
    expectation_for,
    json_or_text,
    normalized,
    unknown_ids,
)
from tests.support.postgres import temporary_database
from tests.support.processes import Process, clean_environment, lgos

pytestmark = [pytest.mark.anyio, pytest.mark.timeout(600)]

REGISTRY = "demo.registry:create_registry"


# The header a gateway names its users in (LGOS_SCOPE_HEADER beside the keys).
USER_HEADER = "x-lgos-user"


@dataclass(frozen=True)
class Caller:
    name: str
    owner: str  # the owner of its key
    key: str
    user: str | None = None  # the user a gateway's key names, if any

    @property
    def credentials(self) -> dict[str, str]:
        return {**bearer(self.key), **({USER_HEADER: self.user} if self.user else {})}

    @property
    def secrets(self) -> list[str]:
        return [self.key, self.owner, *([self.user] if self.user else [])]


def new_caller(name: str) -> Caller:
    # Random owners and keys, so that finding one in a log cannot be a coincidence.
    return Caller(name, f"owner-{uuid.uuid4().hex}", f"sk-{uuid.uuid4().hex}")


def users_of_one_gateway() -> tuple[Caller, Caller]:
    """Two users that one gateway key names (LiteLLM's in the reference stack)."""
    gateway = new_caller("gateway")
    return (
        Caller("alice", gateway.owner, gateway.key, f"user-{uuid.uuid4().hex}"),
        Caller("bob", gateway.owner, gateway.key, f"user-{uuid.uuid4().hex}"),
    )


class CapturedLogs(logging.Handler):
    """Every record of the run, formatted as `lgos serve` writes JSON logs."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.setFormatter(JSONFormatter())
        self.addFilter(RequestContextFilter())

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(self.format(record))


@pytest.fixture
def captured_logs() -> Iterator[CapturedLogs]:
    handler = CapturedLogs()
    root = logging.getLogger()
    lgos_logger = logging.getLogger("lgos")
    previous = root.level, lgos_logger.level
    root.addHandler(handler)
    root.setLevel(logging.INFO)
    lgos_logger.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(previous[0])
        lgos_logger.setLevel(previous[1])


@dataclass(frozen=True)
class Deployment:
    """Where objects are kept and who runs background work: `workers` are `lgos worker`
    processes beside the in-process API (their logs are searched too)."""

    postgres_uri: str | None
    background: Literal["memory", "dbos", "hatchet"]
    workers: tuple[Process, ...] = ()


@pytest.fixture(params=["memory", "postgres", "dbos", "hatchet"])
def deployment(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> Iterator[Deployment]:
    """In-memory persistence; PostgreSQL (background runs in the API process); PostgreSQL
    with background runs on DBOS or Hatchet, in a real `lgos worker`."""
    if request.param == "memory":
        yield Deployment(None, "memory")
        return
    with temporary_database("lgos_security") as uri:
        if request.param == "postgres":
            yield Deployment(uri, "memory")
            return
        engine: dict[str, str] = {}
        if request.param == "hatchet":
            engine = request.getfixturevalue("hatchet_engine")
            # The API's Hatchet client reads its settings from the environment (and .env files
            # in the working directory).
            for name, value in engine.items():
                monkeypatch.setenv(name, value)
            monkeypatch.chdir(tmp_path)
        env = clean_environment(
            **engine, LGOS_POSTGRES_URI=uri, LGOS_BACKGROUND=request.param, LGOS_WORKER_SLOTS="4"
        )
        worker = lgos("worker", REGISTRY, env=env)
        try:
            worker.wait_for_record(lambda r: r.get("message") == "worker.started")
            yield Deployment(uri, request.param, (worker,))
        finally:
            worker.stop()


def settings_for(deployment: Deployment, callers: list[Caller]) -> ServerSettings:
    keys = ",".join(sorted({f"{caller.owner}={caller.key}" for caller in callers}))
    named = any(caller.user for caller in callers)
    return ServerSettings(
        SCOPE_HEADER=USER_HEADER if named else None,
        POSTGRES_URI=deployment.postgres_uri,
        BACKGROUND=deployment.background,
        CORS_ORIGINS=[],
        ENABLE_LANGFUSE=False,
        API_KEYS=SecretStr(keys),
        RESPONSE_SWEEP_INTERVAL_MINUTES=0,
        INTERRUPT_SWEEP_INTERVAL_MINUTES=0,
    )


@asynccontextmanager
async def serving(app: FastAPI) -> AsyncIterator[httpx2.AsyncClient]:
    transport = httpx2.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx2.AsyncClient(transport=transport, base_url="http://lgos", timeout=60) as http,
    ):
        yield http


def route_table(app: FastAPI) -> list[tuple[str, str]]:
    """(methods, path) of every route, those of routers the registry included too (FastAPI
    keeps an included router whole, as one entry holding its routes)."""
    table = []
    pending = list(app.router.routes)
    while pending:
        route = pending.pop(0)
        included = getattr(route, "original_router", None)
        if included is not None:
            pending[:0] = included.routes
            continue
        assert isinstance(route, Route), route
        methods = ",".join(sorted((route.methods or {"*"}) - {"HEAD"}))
        table.append((methods, route.path))
    return table


class Matrix:
    """Runs the cases and keeps every disagreement, to report them all at once."""

    def __init__(self, http: httpx2.AsyncClient, alice: Caller, bob: Caller) -> None:
        self.http = http
        self.callers = (alice, bob)
        self.failures: list[str] = []
        self.replies: list[str] = []
        self.asked = 0

    async def send(
        self, case: Case, ids: Owned, credentials: dict[str, str] | None
    ) -> httpx2.Response:
        ask = case.build(ids)
        headers = {**ask.headers, **(credentials or {})}
        reply = await self.http.request(ask.method, ask.url, json=ask.json, headers=headers)
        self.asked += 1
        self.replies.append(reply.text)
        return reply

    def expect(self, label: str, reply: httpx2.Response, status: int, body: object = None) -> None:
        if reply.status_code != status or (body is not None and json_or_text(reply) != body):
            self.failures.append(f"{label}: {reply.status_code} {reply.text[:300]}")

    async def run(self, route: str, case: Case, objects: dict[str, Owned]) -> None:
        unknown = unknown_ids()
        alice = self.callers[0]
        label = f"{route} [{case.name}]"
        for ids in (objects[alice.name], unknown):
            if case.public:
                self.expect(f"{label} no key", await self.send(case, ids, None), case.own)
                continue
            no_key = await self.send(case, ids, None)
            self.expect(f"{label} no key", no_key, 401, NO_KEY_REFUSAL)
            wrong = await self.send(case, ids, bearer("sk-" + uuid.uuid4().hex))
            self.expect(f"{label} wrong key", wrong, 401, WRONG_KEY_REFUSAL)
            if not case.by_id:
                break
        for caller in self.callers:
            other = next(c for c in self.callers if c is not caller)
            if not case.by_id:
                reply = await self.send(case, unknown, caller.credentials)
                self.expect(f"{label} {caller.name}", reply, case.own)
                continue
            stranger = await self.send(case, objects[other.name], caller.credentials)
            missing = await self.send(case, unknown, caller.credentials)
            self.expect(f"{label} {caller.name} on unknown ids", missing, case.missing)
            self.expect(f"{label} {caller.name} on {other.name}'s ids", stranger, case.missing)
            if normalized(stranger.text, objects[other.name]) != normalized(missing.text, unknown):
                self.failures.append(
                    f"{label}: {caller.name} tells {other.name}'s ids from unknown ones: "
                    f"{stranger.text[:200]} / {missing.text[:200]}"
                )
            own_ids = objects[caller.name]
            if case.destructive:
                own_ids = await create_objects(self.http, caller.credentials)
            own = await self.send(case, own_ids, caller.credentials)
            self.expect(f"{label} {caller.name} on own ids", own, case.own)
            if case.destructive:
                # Its long run would hold a worker's slot for the rest of the matrix.
                url = f"/v1/responses/{own_ids.running}/cancel"
                await self.http.post(url, headers=caller.credentials)


async def test_every_route_answers_only_its_owner(
    deployment: Deployment, captured_logs: CapturedLogs
) -> None:
    await run_the_matrix(deployment, captured_logs, new_caller("alice"), new_caller("bob"))


@pytest.mark.parametrize("deployment", ["memory", "postgres", "dbos"], indirect=True)
async def test_every_route_answers_only_its_user_behind_one_gateway_key(
    deployment: Deployment, captured_logs: CapturedLogs
) -> None:
    """Alice and Bob are two users one gateway key names (`LGOS_API_KEYS` and
    `LGOS_SCOPE_HEADER` together): each is an owner of their own, as with keys of their own."""
    await run_the_matrix(deployment, captured_logs, *users_of_one_gateway())


async def run_the_matrix(
    deployment: Deployment, captured_logs: CapturedLogs, alice: Caller, bob: Caller
) -> None:
    app = create_app(REGISTRY, settings=settings_for(deployment, [alice, bob]))
    async with serving(app) as http:
        table = route_table(app)
        unexpected = [route for route in table if expectation_for(*route) is None]
        assert not unexpected, f"routes the security matrix does not know: {unexpected}"
        objects = {
            alice.name: await create_objects(http, alice.credentials),
            bob.name: await create_objects(http, bob.credentials),
        }
        matrix = Matrix(http, alice, bob)
        for methods, path in table:
            for case in expectation_for(methods, path) or []:
                await matrix.run(f"{methods} {path}", case, objects)
        # The failed attempts changed nothing: every owner still reaches every object.
        for caller in (alice, bob):
            mine = objects[caller.name]
            for url in (
                f"/v1/responses/{mine.response}",
                f"/v1/responses/{mine.paused}",
                f"/v1/conversations/{mine.conversation}/items/{mine.item}",
            ):
                reply = await http.get(url, headers=caller.credentials)
                assert reply.status_code == 200, (caller.name, url, reply.text)
            running = await http.get(f"/v1/responses/{mine.running}", headers=caller.credentials)
            assert running.json()["status"] in ("queued", "in_progress"), running.text
    assert not matrix.failures, "\n".join(matrix.failures)
    assert matrix.asked > 150  # the matrix ran, route by route
    secrets = alice.secrets + bob.secrets
    worker_lines = [line for worker in deployment.workers for line in worker.stdout]
    assert all(worker.alive() for worker in deployment.workers)
    logs = "\n".join(captured_logs.lines + worker_lines)
    assert '"http.route"' in logs  # request records were captured
    leaked = [secret for secret in secrets if secret in logs]
    assert not leaked, "a key or an owner appears in the logs"
    replies = "\n".join(matrix.replies)
    assert not [secret for secret in secrets if secret in replies], "a reply names a secret"
