"""The end of a durable worker's run on PostgreSQL: the end is logged under the run's lease,
and the finished thread's checkpoints go with the lease's release, in its round trip (one
round trip less per run than a delete of their own). Real PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest

from lgos import ServerSettings, open_resources
from lgos.background.executor import DurableRuns, JobExecutor
from lgos.run.interrupts import checkpoint_thread_id
from lgos.wire import ids
from tests.background import job_worker
from tests.background.test_job import submitted

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


@contextmanager
def sent_in_order(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, int | None]]]:
    """Every statement psycopg's async cursors send in the block, in order: its first four
    words, and the pipeline it went in (None: a round trip of its own). The statements of one
    pipeline go to the server in one round trip."""
    sent: list[tuple[str, int | None]] = []
    execute = psycopg.AsyncCursor.execute

    async def recording(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        pipeline = self.connection._pipeline
        sent.append((" ".join(str(query).split()[:4]), None if pipeline is None else id(pipeline)))
        return await execute(self, query, *args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(psycopg.AsyncCursor, "execute", recording)
        yield sent


@pytest.mark.parametrize("stream", [False, True], ids=["polled", "streamed"])
async def test_a_finished_run_logs_its_end_and_releases_its_lease_in_one_round_trip(
    database: str, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    """The end is committed in a transaction of its own, then the release (which deletes the
    run's checkpoints) unlocks the run: both in one pipeline, so one round trip, and the end is
    there (and the checkpoints still were) for anyone who takes the lease next."""
    settings = ServerSettings(POSTGRES_URI=database, POSTGRES_POOL_SIZE=4, BACKGROUND="none")
    request = {
        "model": "background-mock",
        "input": "Quarterly risks",
        "background": True,
        "metadata": {"lgos_settings": '{"delay_seconds": 0}'},
        "stream": stream,
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
        with sent_in_order(monkeypatch) as sent:
            response = await executor(job, engine_run_id)
        assert response["status"] == "completed"
        appends = [i for i, (words, _) in enumerate(sent) if words.startswith("WITH added AS")]
        # The worker's appends: its end alone (the start went with the log's read), or for a
        # stream its batches, the last with the end.
        assert len(appends) == 1 or stream
        end = appends[-1]
        pipeline = sent[end][1]
        assert pipeline is not None, "the end was logged in a round trip of its own"
        together = [words for words, used in sent if used == pipeline]
        assert together[0] == "BEGIN"
        assert together[1].startswith("WITH added AS")
        assert together[2] == "COMMIT"
        # The release, after the commit: it deletes the checkpoints and unlocks.
        assert together[3].startswith("WITH done AS (DELETE")
        assert len(together) == 4
        assert not [words for words, _ in sent[end + 3 :]], "statements after the release"
        for table in ("checkpoints", "checkpoint_blobs", "checkpoint_writes"):
            query = f"SELECT count(*) FROM {table} WHERE thread_id = %s"
            assert await rows(database, query, thread) == 0, table
        assert await rows(database, "SELECT count(*) FROM lgos_paused_runs") == 0
        last = await events.last(engine_run_id)
        assert last is not None
        assert last["type"] == "response.completed"
        assert await rows(database, LOCKS_HERE) == 0
