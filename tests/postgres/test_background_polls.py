"""A poll of a stored background Response on an engine whose workers log every end (Hatchet):
the record, which proves the owner, and the run's last logged event come in one statement.
Real PostgreSQL; the engine is the Hatchet tests' fake (a poll here never reaches it)."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from lgos.core.background import FIRST_WORKER_SEQUENCE
from lgos.core.errors import NotFoundError
from lgos.integrations.hatchet import HatchetBackgroundBackend
from lgos.integrations.postgres import PostgresResponseEventLog
from lgos.integrations.postgres.migrations import _apply_own_migrations
from lgos.integrations.postgres.pool import Pool, new_pool
from lgos.integrations.postgres.stored import PostgresResponseStore
from lgos.service.background import BackgroundResponses
from lgos.service.retrieval import ResponseRetrieval
from lgos.service.stateful import StatefulResponses
from lgos.wire import ids, responses_decoder
from tests.background.job_worker import registry
from tests.background.test_hatchet import FakeHatchet
from tests.support.postgres import counted_statements

pytestmark = [pytest.mark.anyio, pytest.mark.postgres, pytest.mark.timeout(120)]


@pytest.fixture
async def pool(database: str) -> AsyncIterator[Pool]:
    async with new_pool(database, 2) as opened:
        await _apply_own_migrations(opened)
        yield opened


async def test_a_poll_reads_the_record_and_the_runs_last_event_in_one_statement(
    pool: Pool, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = PostgresResponseEventLog(pool)
    store = PostgresResponseStore(pool, log)  # as the server builds it: the engine's log
    engine = FakeHatchet()
    backend = HatchetBackgroundBackend(engine, engine, events=log)
    stateful = StatefulResponses(store, registry(), backend)
    background = BackgroundResponses(registry(), backend, stateful)
    retrieval = ResponseRetrieval(stateful, background)  # GET /v1/responses/{id}
    body = {"model": "background-mock", "input": "x", "background": True}
    created = await background.create(
        responses_decoder.decode(body), owner_scope="alice", idempotency_key=None
    )
    response_id = str(created["id"])
    parsed = ids.parse_run_response_id(response_id)
    assert parsed is not None

    # Queued, then started by a worker, then ended: each poll answers from one statement.
    with counted_statements(monkeypatch) as statements:
        assert (await retrieval.retrieve(response_id, "alice"))["status"] == "queued"
    assert sum(statements.values()) == 1, statements
    started = {"type": "response.in_progress", "sequence_number": FIRST_WORKER_SEQUENCE}
    await log.append(parsed.nonce, [started])
    with counted_statements(monkeypatch) as statements:
        assert (await retrieval.retrieve(response_id, "alice"))["status"] == "in_progress"
    assert sum(statements.values()) == 1, statements
    ended = {**created, "status": "completed", "output": []}
    await log.append(
        parsed.nonce,
        [{"type": "response.completed", "sequence_number": 3, "response": ended}],
    )
    with counted_statements(monkeypatch) as statements:
        assert await retrieval.retrieve(response_id, "alice") == ended
    assert sum(statements.values()) == 1, statements

    # Another owner is not shown the run, nor its end.
    with pytest.raises(NotFoundError):
        await retrieval.retrieve(response_id, "mallory")
    assert await store.get_response_and_last(response_id, "mallory", parsed.nonce) == (None, None)
