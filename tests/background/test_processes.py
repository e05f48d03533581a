"""Background Responses across real processes on PostgreSQL: two `lgos serve` APIs and two
`lgos worker` processes, on DBOS and on a real Hatchet engine: a worker killed mid-run, the
guide's client, the engine version guard, shutdown."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import openai
import psycopg
import pytest
from psycopg_pool import AsyncConnectionPool

from lgos.core.errors import ConfigurationError
from lgos.integrations import hatchet as hatchet_integration
from lgos.integrations.dbos import open_dbos_client
from lgos.integrations.postgres import PostgresResponseEventLog
from lgos.run.interrupts import checkpoint_thread_id
from lgos.wire import ids
from tests.background.conftest import Deployment, is_message
from tests.background.test_conformance import NO_DELAY, finished, step_seen, topic
from tests.support import hatchet as hatchet_support

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.postgres,
    pytest.mark.processes,
    pytest.mark.timeout(600, func_only=True),
]


@pytest.fixture
async def dbos_only(dbos_deployment: Deployment) -> Deployment:
    dbos_deployment.ensure_workers()
    try:
        yield dbos_deployment  # type: ignore[misc]
    finally:
        await dbos_deployment.close_clients()


async def test_creates_on_either_api_are_polled_on_the_other(workers: Deployment) -> None:
    created = await asyncio.gather(
        *(
            workers.sdk(index % 2).responses.create(
                model="background-mock",
                input=f"report {index}",
                background=True,
                metadata=NO_DELAY,
            )
            for index in range(8)
        )
    )
    for index, accepted in enumerate(created):
        done = await finished(workers, accepted.id, api=index + 1)
        assert done.status == "completed"
        assert done.output_text == f"Background report for: report {index}"


async def test_killed_worker_run_completes_without_redoing_finished_steps(
    workers: Deployment,
) -> None:
    name = topic()
    accepted = await workers.sdk(0).responses.create(
        model="gated-steps", input=name, background=True
    )
    victim_pid = await step_seen(workers, name, "step_2", "started")
    run_id = ids.parse_run_response_id(accepted.id).run_id  # type: ignore[union-attr]
    # step_1 is committed to a checkpoint before step_2 starts, though the graph declares no
    # interrupts: that is what the next worker continues from.
    assert await checkpoint_rows(workers, "gated-steps", run_id) > 0
    victim = workers.worker_with_pid(victim_pid)
    victim.process.send_signal(signal.SIGKILL)
    victim.process.wait()
    await workers.open_gate(name)

    done = await finished(workers, accepted.id, api=1)
    assert done.status == "completed"
    assert done.output_text == f"Steps done for {name}: step_1, step_2, step_3"
    steps = await workers.steps(name)
    events = [(step, event) for step, event, _ in steps]
    # step_1 finished before the kill and never ran again; step_2 was cut off and started over
    # on the surviving worker; step_3 ran once.
    assert events.count(("step_1", "started")) == 1
    assert events.count(("step_1", "finished")) == 1
    assert events.count(("step_2", "started")) == 2
    assert events.count(("step_2", "finished")) == 1
    assert events.count(("step_3", "finished")) == 1
    rescuer = {pid for step, event, pid in steps if (step, event) == ("step_2", "finished")}
    assert victim_pid not in rescuer
    # The checkpoint that carried the run across workers is gone once it finished.
    assert await checkpoint_rows(workers, "gated-steps", run_id) == 0


async def test_killed_worker_stream_continues_without_repeats(workers: Deployment) -> None:
    name = topic()
    stream = await workers.sdk(0).responses.create(
        model="gated-steps", input=name, background=True, stream=True
    )
    seen = []
    async for event in stream:
        seen.append(event)
        if event.type == "response.in_progress":
            break
    victim_pid = await step_seen(workers, name, "step_2", "started")
    victim = workers.worker_with_pid(victim_pid)
    victim.process.send_signal(signal.SIGKILL)
    victim.process.wait()
    await workers.open_gate(name)
    seen += [event async for event in stream]
    # The rescuing worker continued the sequence the dead one began: no number twice.
    assert [event.sequence_number for event in seen] == list(range(len(seen)))
    assert [event.type for event in seen].count("response.in_progress") == 1
    assert seen[-1].type == "response.completed"
    assert seen[-1].response.output_text == f"Steps done for {name}: step_1, step_2, step_3"
    assert (await finished(workers, seen[0].response.id, api=1)).status == "completed"


async def checkpoint_rows(workers: Deployment, model: str, run_id: str) -> int:
    thread_id = checkpoint_thread_id("default", model, run_id)
    async with await psycopg.AsyncConnection.connect(workers.uri, autocommit=True) as conn:
        cursor = await conn.execute(
            "SELECT (SELECT count(*) FROM checkpoints WHERE thread_id = %s)"
            " + (SELECT count(*) FROM checkpoint_writes WHERE thread_id = %s)",
            (thread_id, thread_id),
        )
        row = await cursor.fetchone()
    assert row is not None
    return int(row[0])


async def test_restarted_worker_takes_runs_again(workers: Deployment) -> None:
    # The fixture restarted the worker killed above (same LGOS_WORKER_ID); runs still finish.
    accepted = await workers.sdk(1).responses.create(
        model="background-mock", input="after restart", background=True, metadata=NO_DELAY
    )
    assert (await finished(workers, accepted.id, api=0)).status == "completed"


async def test_seed_client_works_unmodified(workers: Deployment) -> None:
    script = Path(__file__).with_name("seed_client.py")
    result = await asyncio.to_thread(
        subprocess.run,
        [sys.executable, str(script)],
        env={**os.environ, "OPENAI_BASE_URL": f"{workers.apis[0].base_url}/v1"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0].startswith("accepted resp_")
    assert lines[0].endswith(" queued")
    assert lines[-1] == (
        "completed Background report for: Summarize the migration risks and next actions."
    )


async def test_retention_deletes_finished_runs(dbos_only: Deployment) -> None:
    workers = dbos_only
    client = workers.sdk(0)
    accepted = await client.responses.create(
        model="background-mock", input="old news", background=True, metadata=NO_DELAY
    )
    await finished(workers, accepted.id)
    streamed = [
        event
        async for event in await client.responses.create(
            model="background-mock",
            input="old stream",
            background=True,
            stream=True,
            metadata=NO_DELAY,
        )
    ]
    streamed_id = ids.parse_run_response_id(streamed[0].response.id)
    assert streamed_id is not None
    pool = AsyncConnectionPool(
        workers.uri, min_size=1, max_size=1, kwargs={"autocommit": True}, open=False
    )
    await pool.open()
    try:
        events = PostgresResponseEventLog(pool)
        async with open_dbos_client(workers.uri, events) as backend:
            parsed = ids.parse_run_response_id(accepted.id)
            assert parsed is not None
            assert await backend.get(parsed.nonce) is not None
            assert len(await events.read(streamed_id.nonce)) == len(streamed)
            assert await backend.delete_finished(timedelta(0)) >= 2
            assert await backend.get(parsed.nonce) is None
            # A streamed Response's events go with its run.
            assert await events.read(streamed_id.nonce) == []
    finally:
        await pool.close()
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(accepted.id)
    with pytest.raises(openai.NotFoundError):
        await client.responses.retrieve(streamed[0].response.id, stream=True)


async def test_worker_stops_gracefully_on_sigterm(dbos_only: Deployment) -> None:
    workers = dbos_only
    worker = workers.workers["test-dbos-worker-1"]
    worker.process.send_signal(signal.SIGTERM)
    assert worker.process.wait(timeout=60) == 0
    worker.wait_for_record(is_message("worker.stopped"))
    records = worker.records()  # every stdout line is a JSON object
    assert any(record.get("executor_id") == "test-dbos-worker-1" for record in records)
    assert all(json.dumps(record) for record in records)


async def test_engine_version_guard_reads_the_real_engine(
    hatchet_engine: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for key, value in hatchet_engine.items():
        monkeypatch.setenv(key, value)
    client = hatchet_integration.connect()
    reported = await hatchet_integration.check_engine_version(client)
    # The engine reports the release it was built as (linked in by scripts/setup-hatchet.sh).
    if "HATCHET_CLIENT_TOKEN" not in os.environ:
        assert reported == hatchet_support.pinned_version()
    parsed = hatchet_integration.parse_engine_version(reported)
    assert parsed is not None
    assert parsed >= hatchet_integration.MIN_ENGINE_VERSION
    # The same engine, held to a release it is older than, is refused with the reason.
    newer = (parsed[0], parsed[1], parsed[2] + 1)
    monkeypatch.setattr(hatchet_integration, "MIN_ENGINE_VERSION", newer)
    with pytest.raises(ConfigurationError, match="older than"):
        await hatchet_integration.check_engine_version(client)
