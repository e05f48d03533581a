"""A paused approval survives a restart when the service runs on PostgreSQL.

Needs a server: `TEST_POSTGRES_URI` (a role allowed to create databases; defaults to the
compose file's PostgreSQL, which `just up` starts). Run with `just test-postgres`.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from lgos import ServerSettings
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from tests.support import make_app, questions, running

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

ADMIN_URI = os.environ.get(
    "TEST_POSTGRES_URI", "postgresql://app:app-dev-password@127.0.0.1:5432/app"
)


@pytest.fixture
def database_uri() -> Iterator[str]:
    """A throwaway database, dropped afterwards."""
    name = f"test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(ADMIN_URI, autocommit=True, connect_timeout=10) as admin:
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    try:
        yield make_conninfo(**{**conninfo_to_dict(ADMIN_URI), "dbname": name})
    finally:
        with psycopg.connect(ADMIN_URI, autocommit=True, connect_timeout=10) as admin:
            admin.execute(
                sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
            )


async def test_a_pause_is_answered_after_a_restart(database_uri: str) -> None:
    settings = ServerSettings(POSTGRES_URI=database_uri, BACKGROUND="memory", ENABLE_LANGFUSE=False)
    async with running(make_app(settings)) as before:
        paused = await before.responses.create(model="approval", input="ship release 2.0")
    [question] = questions(paused)

    # A new application on the same database: the pause lives in PostgreSQL, not in memory.
    async with running(make_app(settings)) as after:
        done = await after.responses.create(
            model="approval",
            previous_response_id=paused.id,
            input=[
                {"type": "function_call_output", "call_id": question.call_id, "output": "approve"}
            ],
        )
    assert done.output_text == "Done: ship release 2.0."
