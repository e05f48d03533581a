"""The API side of the DBOS engine: enqueue, read and cancel runs with a plain-SQL
`DBOSClient` (no DBOS runtime), and delete finished ones."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from dbos import DBOSClient, EnqueueOptions, WorkflowSerializationFormat
from psycopg.rows import tuple_row

from lgos.background import webhooks
from lgos.core.background import BackgroundJob, BackgroundRun, ResponseEventLog
from lgos.core.webhooks import WebhookSettings
from lgos.integrations.dbos.internals import PORTABLE_JSON, READ_RUN
from lgos.integrations.dbos.names import (
    APPLICATION_NAME,
    APPLICATION_VERSION,
    QUEUE_NAME,
    WORKFLOW_NAME,
)
from lgos.integrations.dbos.runs import (
    FINISHED,
    engine_run_id,
    portable_run,
    to_run,
)
from lgos.integrations.dbos.schema import migrate, sqlalchemy_url
from lgos.integrations.dbos.webhooks import enqueue_with_client

if TYPE_CHECKING:
    from lgos.integrations.postgres.pool import Pool

_RETENTION_BATCH = 500


class DBOSBackgroundBackend:
    """`BackgroundBackend` over a `DBOSClient` (API side: enqueue, read, cancel).

    With `pool` (the server's psycopg pool on the same database), a run is read with one
    indexed query on that pool instead of `DBOSClient.list_workflows`, which builds a
    SQLAlchemy query of every column, pings its connection and runs in a thread: that read
    answers every poll, and was most of the API's CPU under load.
    """

    # Capabilities (`BackgroundBackend`): it streams when given `events`; DBOS records a
    # run's end as the workflow returns, so polls need no logged result.
    results_in_log = False

    def __init__(
        self,
        client: DBOSClient,
        events: ResponseEventLog | None = None,
        pool: Pool | None = None,
        webhooks: WebhookSettings | None = None,
    ) -> None:
        self.client = client
        self.webhooks = webhooks
        # Streamed Responses' events, in the same database (`PostgresResponseEventLog`).
        self.events = events
        self.pool = pool

    async def submit(self, job: BackgroundJob) -> BackgroundRun:
        run_id = engine_run_id(job.idempotency_key)
        options: EnqueueOptions = {
            "workflow_name": WORKFLOW_NAME,
            "queue_name": QUEUE_NAME,
            "workflow_id": run_id,
            "app_version": APPLICATION_VERSION,
            "application_name": APPLICATION_NAME,
            "serialization_type": WorkflowSerializationFormat.PORTABLE,
        }
        await self.client.enqueue_async(options, run_id, job.model_dump(mode="json"))
        if job.idempotency_key is None:
            return BackgroundRun(id=run_id, job=job, status="queued")
        # The id may have been taken by an earlier create with this key: report that run, whose
        # stored job tells the caller whether the body was the same.
        existing = await self.get(run_id)
        if existing is None:
            raise RuntimeError(f"DBOS workflow {run_id} vanished right after its enqueue")
        return existing

    async def get(
        self, run_id: str, *, exists: bool = False, known: BackgroundRun | None = None
    ) -> BackgroundRun | None:
        # DBOS's view is its own tables, which have a run from its enqueue on: `exists`
        # changes nothing, and neither does `known` (the status comes with the run's row).
        if self.pool is not None:
            async with self.pool.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
                await cur.execute(READ_RUN, (run_id,))
                row = await cur.fetchone()
            if row is None or row[1] != WORKFLOW_NAME:
                return None
            status, _, serialization, inputs, output = row
            if serialization == PORTABLE_JSON:
                return portable_run(run_id, status, inputs, output)
            # Not written by this LGOS (another format): let DBOS decode it.
        statuses = await self.client.list_workflows_async(
            workflow_ids=[run_id], name=WORKFLOW_NAME, load_output=True
        )
        if not statuses:
            return None
        return to_run(statuses[0])

    async def cancel(self, run_id: str) -> None:
        # DBOS leaves finished workflows alone; a running one is preempted within ~1 s.
        await self.client.cancel_workflow_async(run_id)
        if self.webhooks is None:
            return
        # A cancelled workflow runs nothing more, so the canceller enqueues its webhook; only
        # when the cancel is what ended it (a run that had finished keeps its own event).
        run = await self.get(run_id)
        if run is not None and run.status == "cancelled":
            await enqueue_with_client(
                self.client, webhooks.for_cancelled(self.webhooks, run.job, run_id)
            )

    async def delete_finished(self, older_than: timedelta) -> int:
        """Delete runs that finished more than `older_than` ago; return how many."""
        cutoff = (datetime.now(UTC) - older_than).isoformat()
        deleted = 0
        while True:
            expired = await self.client.list_workflows_async(
                name=WORKFLOW_NAME,
                status=FINISHED,
                completed_before=cutoff,
                limit=_RETENTION_BATCH,
                load_input=False,
                load_output=False,
            )
            if not expired:
                return deleted
            run_ids = [item.workflow_id for item in expired]
            await self.client.delete_workflows_async(run_ids)
            if self.events is not None:
                await self.events.delete(run_ids)
            deleted += len(expired)
            if len(expired) < _RETENTION_BATCH:
                return deleted


@asynccontextmanager
async def open_dbos_client(
    uri: str,
    events: ResponseEventLog | None = None,
    pool: Pool | None = None,
    webhooks: WebhookSettings | None = None,
) -> AsyncIterator[DBOSBackgroundBackend]:
    """The API side: a `DBOSBackgroundBackend` on a plain-SQL `DBOSClient` (and `pool`, the
    server's pool on the same database, for reading runs)."""
    await migrate(uri)
    client = await asyncio.to_thread(
        lambda: DBOSClient(
            system_database_url=sqlalchemy_url(uri),
            application_name=APPLICATION_NAME,
            # DBOS would block a create until the database is back (with no deadline): raise
            # instead, so the request answers 503 and the client retries it.
            retry_connection_errors=False,
        )
    )
    try:
        yield DBOSBackgroundBackend(client, events, pool, webhooks)
    finally:
        await asyncio.to_thread(client.destroy)
