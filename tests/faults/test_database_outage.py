"""PostgreSQL stopped for 20 s under two `lgos serve` APIs and two `lgos worker` processes, on
DBOS and on Hatchet (whose engine keeps its own database on the same cluster, as in a
deployment with one PostgreSQL).

Before issue 29, every request that needed the database hung until it was back and ~10 s more
(a 200 after up to 40 s), service came back 8.7-12.8 s after PostgreSQL did, a Hatchet create
got a generic 500, each DBOS worker wrote ~37 warnings a second, and a run whose attempt lost
the database started over on its retry (its checkpoint deleted by the failed attempt).
"""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import openai
import psycopg
import pytest

from tests.background.conftest import Deployment, running
from tests.background.test_conformance import NO_DELAY, topic
from tests.faults.cluster import Cluster
from tests.faults.conftest import START_SECONDS
from tests.faults.test_database_and_workers import (
    DEADLINE_SECONDS,
    eventually,
    finished,
    step_seen,
    steps_text,
)
from tests.support import hatchet
from tests.support.timings import Timings

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.postgres,
    pytest.mark.processes,
    # Four processes (and an engine) start here, then a 20 s outage and its recovery.
    pytest.mark.timeout(900, func_only=True),
]

OUTAGE_SECONDS = 20.0
# Short on purpose: a request that waited for the database to come back (20 s) would get a
# 200 instead of its 503, and fail the test.
WAIT_SECONDS = "1"
# Long enough that the outage costs no worker its lease: this test is about the outage itself
# (test_database_and_workers.py covers leases lost).
LEASE_SECONDS = "60"
# What a worker may write during a 20 s outage: one record when it loses the database, one
# when it regains it, a summary every 10 s, and a few of its own (today: ~37 a second).
MAX_WORKER_RECORDS = 15


@pytest.fixture(scope="module", params=["dbos", "hatchet"])
def deployment(
    request: pytest.FixtureRequest, cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    engine: str = request.param
    with _engine_settings(engine, cluster, tmp_path_factory) as extra_env:
        database = _database(cluster, engine)
        deployment = Deployment(engine, database, apis=2, workers=2, start_timeout=START_SECONDS)
        deployment.env.update(extra_env)
        deployment.env["LGOS_POSTGRES_WAIT_SECONDS"] = WAIT_SECONDS
        deployment.env["LGOS_WORKER_LEASE_SECONDS"] = LEASE_SECONDS
        with running(deployment):
            yield deployment


def _database(cluster: Cluster, name: str) -> str:
    """A database of its own on the cluster, for one engine's deployment."""
    database = f"lgos_outage_{name}"
    with psycopg.connect(cluster.uri, autocommit=True) as conn:
        conn.execute(f"DROP DATABASE IF EXISTS {database}")
        conn.execute(f"CREATE DATABASE {database}")
    return cluster.uri.rsplit("/", 1)[0] + "/" + database


class _NoEngine:
    def __enter__(self) -> dict[str, str]:
        return {}

    def __exit__(self, *exc: object) -> None:
        return None


def _engine_settings(
    engine: str, cluster: Cluster, tmp_path_factory: pytest.TempPathFactory
) -> Any:
    if engine != "hatchet":
        return _NoEngine()
    reason = hatchet.unavailable_reason()
    if reason:
        pytest.skip(reason)
    return hatchet.running_engine(
        tmp_path_factory.mktemp("hatchet-outage"), database_uri=_database(cluster, "hatchet_engine")
    )


@dataclass
class Refusals:
    """What the clients saw while the database was away."""

    answers: list[tuple[str, int, str | None, str | None, str]] = field(default_factory=list)

    def add(self, what: str, error: openai.APIStatusError) -> None:
        body = error.body if isinstance(error.body, dict) else {}
        self.answers.append(
            (
                what,
                error.status_code,
                error.response.headers.get("retry-after"),
                body.get("code"),
                str(body.get("message")),
            )
        )


async def test_outage_is_answered_503_and_loses_nothing(
    deployment: Deployment, cluster: Cluster
) -> None:
    deployment.ensure_workers()
    timings = Timings(f"database-outage-{deployment.engine}")
    try:
        async with asyncio.timeout(4 * DEADLINE_SECONDS):
            await _outage(deployment, cluster, timings)
    finally:
        timings.save()
        await deployment.close_clients()


async def _outage(deployment: Deployment, cluster: Cluster, timings: Timings) -> None:
    # Running when the database goes: one gated run per worker slot, waiting at step_2.
    running = [topic() for _ in range(deployment.slots)]
    runs = {
        name: await deployment.sdk(index).responses.create(
            model="gated-steps", input=name, background=True
        )
        for index, name in enumerate(running)
    }
    for name in running:
        await step_seen(deployment, name, "step_2", "started")
    worker_lines = {key: len(worker.stdout) for key, worker in deployment.workers.items()}

    # Every session is cut at once; `fast` rather than `immediate`, which on this cluster (no
    # synchronous commits, for speed) would also lose the last commits, checkpoints among
    # them, as no database a deployment runs on would.
    await asyncio.to_thread(cluster.stop, "fast")
    stopped = time.monotonic()
    refusals = Refusals()
    refused_creates: dict[str, str] = {}  # Idempotency-Key -> topic
    sent = 0
    while time.monotonic() - stopped < OUTAGE_SECONDS:
        api = deployment.sdk(sent % 2)
        other = deployment.sdk(sent % 2 + 1)
        name, key = topic(), uuid.uuid4().hex
        try:
            await api.responses.create(
                model="gated-steps",
                input=name,
                background=True,
                extra_headers={"Idempotency-Key": key},
            )
        except openai.APIStatusError as error:
            refusals.add("create", error)
            refused_creates[key] = name
        else:
            raise AssertionError("a create succeeded while the database was stopped")
        try:
            await other.responses.retrieve(runs[running[sent % len(running)]].id)
        except openai.APIStatusError as error:
            refusals.add("poll", error)
        else:
            raise AssertionError("a poll succeeded while the database was stopped")
        try:
            await api.responses.create(
                model="background-interrupt", input="Pause", metadata=NO_DELAY
            )
        except openai.APIStatusError as error:
            refusals.add("foreground", error)
        else:
            raise AssertionError("a foreground run succeeded while the database was stopped")
        sent += 1
    await asyncio.to_thread(cluster.start)
    back = time.monotonic()
    worker_records = {
        key: worker.stdout[worker_lines[key] :] for key, worker in deployment.workers.items()
    }

    # The first request after the database is back is served (how soon: a figure, not a test).
    first = await deployment.sdk(0).responses.retrieve(runs[running[0]].id)
    timings.record("first request served after pg_ctl start", back)
    assert first.status == "in_progress"

    # Every request sent during the outage was refused, at once, the way the SDKs retry.
    assert sent >= 3, refusals
    for what, status, retry_after, code, message in refusals.answers:
        assert status == 503, refusals
        assert retry_after is not None, refusals
        assert int(retry_after) >= 1, refusals
        if what == "create" and deployment.engine == "hatchet":
            # The engine answers first, and its answer names it (it was a generic 500).
            assert code == "engine_unavailable", refusals
            assert "Hatchet" in message, refusals
        else:
            assert code == "database_unavailable", refusals

    # Each refused create, retried with its key, runs once; the runs the outage caught finish.
    retried = {}
    for key, name in refused_creates.items():
        retried[name] = await eventually(
            lambda key=key, name=name: deployment.sdk(1).responses.create(
                model="gated-steps",
                input=name,
                background=True,
                extra_headers={"Idempotency-Key": key},
            ),
            f"the create of {name} to be accepted",
        )
    again = await deployment.sdk(0).responses.create(
        model="gated-steps",
        input=next(iter(refused_creates.values())),
        background=True,
        extra_headers={"Idempotency-Key": next(iter(refused_creates))},
    )
    assert again.id == next(iter(retried.values())).id
    for name in [*running, *retried]:
        await deployment.open_gate(name)
    for name, run in [*runs.items(), *retried.items()]:
        done = await finished(deployment, run.id, api=1)
        assert (done.status, done.output_text) == ("completed", steps_text(name)), (
            name in running,
            done.id,
            done.error,
        )

    # Nothing ran twice: every step of every run finished once, and step_1 of the runs the
    # outage caught at step_2 did not start again (their retry continued from the checkpoint).
    for name in [*running, *retried]:
        steps = await deployment.steps(name)
        finishes = [step for step, event, _ in steps if event == "finished"]
        assert finishes == ["step_1", "step_2", "step_3"], (name in running, steps)
        started = [step for step, event, _ in steps if event == "started"]
        assert started.count("step_1") == 1, (name, steps)

    # Each worker wrote a bounded number of records while the database was away. On Hatchet,
    # the SDK's action-listener subprocess prints lines of its own (its reconnection attempts
    # to an engine that cannot check the token), which LGOS does not configure: counted apart.
    timings.rows.append(("requests refused during the outage", len(refusals.answers)))
    for key, lines in worker_records.items():
        records = [line for line in lines if line.startswith("{")]
        timings.rows.append((f"records of {key} during the outage", len(records)))
        timings.rows.append((f"other lines of {key} during the outage", len(lines) - len(records)))
        assert len(records) <= MAX_WORKER_RECORDS, (key, len(records), "\n".join(records))
