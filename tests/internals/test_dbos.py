"""DBOS still has the internals LGOS relies on (lgos/integrations/dbos/internals.py): an
upgrade that changes one fails here, not as orphaned runs nobody recovers or polls that no
longer find their run."""

from __future__ import annotations

import asyncio
import inspect
import json

import psycopg
import pytest
from dbos import DBOS, DBOSClient, EnqueueOptions, WorkflowSerializationFormat

from lgos.integrations.dbos import (
    APPLICATION_NAME,
    QUEUE_NAME,
    WORKFLOW_NAME,
    migrate,
    sqlalchemy_url,
)
from lgos.integrations.dbos.internals import (
    PORTABLE_JSON,
    PORTABLE_POSITIONAL_ARGS,
    READ_RUN,
)

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]


def test_recovery_of_an_executors_pending_workflows_is_there() -> None:
    recover = DBOS._recover_pending_workflows
    assert inspect.ismethod(recover)  # a classmethod ...
    assert recover.__self__ is DBOS  # ... of DBOS itself
    assert list(inspect.signature(recover).parameters) == ["executor_ids"]


async def test_a_run_is_read_from_the_system_tables(database: str) -> None:
    await migrate(database)
    client = await asyncio.to_thread(
        lambda: DBOSClient(
            system_database_url=sqlalchemy_url(database), application_name=APPLICATION_NAME
        )
    )
    try:
        options: EnqueueOptions = {
            "workflow_name": WORKFLOW_NAME,
            "queue_name": QUEUE_NAME,
            "workflow_id": "internals-probe",
            "serialization_type": WorkflowSerializationFormat.PORTABLE,
        }
        await client.enqueue_async(options, "internals-probe", {"job": 1})
    finally:
        await asyncio.to_thread(client.destroy)
    async with await psycopg.AsyncConnection.connect(database) as conn:
        cursor = await conn.execute(READ_RUN, ("internals-probe",))
        row = await cursor.fetchone()
    assert row is not None
    status, name, serialization, inputs, output = row
    assert (status, name, serialization, output) == ("ENQUEUED", WORKFLOW_NAME, PORTABLE_JSON, None)
    assert json.loads(inputs)[PORTABLE_POSITIONAL_ARGS] == ["internals-probe", {"job": 1}]
