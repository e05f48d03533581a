"""The end of a durable worker's run on PostgreSQL: the end is logged under the run's lease,
and the finished thread's checkpoints go with the lease's release, in its round trip (one
round trip less per run than a delete of their own). Real PostgreSQL."""

from __future__ import annotations

from typing import Any

import psycopg
import pytest

from lgos import ServerSettings, open_resources
from lgos.background.executor import DurableRuns, JobExecutor
from lgos.core.background import TERMINAL_EVENTS
from lgos.run.interrupts import checkpoint_thread_id
from lgos.wire import ids
from tests.background import job_worker
from tests.background.test_job import submitted
from tests.support.postgres import counted_statements

# Advisory locks held in this test's database (the server is shared with other tests).
LOCKS_HERE = (
    "SELECT count(*) FROM pg_locks WHERE locktype = 'advisory' "
    "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())"
)

pytestmark = [pytest.mark.anyio, pytest.mark.postgres, pytest.mark.timeout(120)]


async def rows(uri: str, query: str, *params: object) -> int:
    async with await psycopg.AsyncConnection.connect(uri, autocommit=True) as conn:
        cursor = await conn.execute(query, params)
        row = await cursor.fetchone()
        return int(row[0]) if row else 0


async def test_a_finished_runs_checkpoints_go_with_its_lease_after_its_logged_end(
    database: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    settings = ServerSettings(POSTGRES_URI=database, POSTGRES_POOL_SIZE=4, BACKGROUND="none")
    request = {
        "model": "background-mock",
        "input": "Quarterly risks",
        "background": True,
        "metadata": {"lgos_settings": '{"delay_seconds": 0}'},
    }
    job = submitted(request, job_worker.registry())
    engine_run_id = ids.new_hex()
    thread = checkpoint_thread_id(job.owner_scope, job.model, job.run_id)
    async with open_resources(settings) as resources:
        events = resources.events
        assert events is not None
        executor = JobExecutor(
            registry=job_worker.registry(),
            durable=DurableRuns(resources.checkpointer, resources.run_coordinator),
            events=events,
        )
        checkpoints_at_the_end: list[int] = []
        append = events.append

        async def logging_the_end(run_id: str, batch: Any) -> None:
            if any(event["type"] in TERMINAL_EVENTS for event in batch):
                checkpoints_at_the_end.append(
                    await rows(
                        database, "SELECT count(*) FROM checkpoints WHERE thread_id = %s", thread
                    )
                )
            await append(run_id, batch)

        monkeypatch.setattr(events, "append", logging_the_end)
        with counted_statements(monkeypatch, words=4) as statements:
            response = await executor(job, engine_run_id)
        assert response["status"] == "completed"
        # The end was logged while the run's checkpoints were still there (under the lease) ...
        assert len(checkpoints_at_the_end) == 1
        assert checkpoints_at_the_end[0] > 0
        # ... and they went with the release, which sent no statement of its own for them.
        for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
            query = f"SELECT count(*) FROM {table} WHERE thread_id = %s"
            assert await rows(database, query, thread) == 0, table
        assert await rows(database, "SELECT count(*) FROM lgos_paused_runs") == 0
        assert not [kind for kind in statements if kind.startswith("DELETE FROM checkpoint")]
        # The run ended: its lease is free, its Response logged.
        last = await events.last(engine_run_id)
        assert last is not None
        assert last["type"] == "response.completed"
        assert await rows(database, LOCKS_HERE) == 0
