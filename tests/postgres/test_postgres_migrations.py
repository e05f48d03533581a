"""Replicas starting together on an empty database migrate it once, without errors."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import psycopg
import pytest

from lgos.integrations.postgres import MIGRATIONS

pytestmark = [pytest.mark.postgres, pytest.mark.processes]

# Each process opens the resources once the test says "go" on stdin, so they really start
# their migrations at the same moment instead of one after the other.
REPLICA = textwrap.dedent(
    """
    import asyncio, sys
    from lgos.integrations.postgres import open_postgres_resources
    from lgos.server import ServerSettings

    async def main() -> None:
        settings = ServerSettings(POSTGRES_URI=sys.argv[1], POSTGRES_POOL_SIZE=2)
        print("ready", flush=True)
        sys.stdin.readline()
        async with open_postgres_resources(settings) as resources:
            await resources.checkpointer.aget_tuple({"configurable": {"thread_id": "probe"}})
            await resources.run_coordinator.paused_before(__import__("datetime").datetime.now(
                __import__("datetime").UTC), 1)
        print("migrated", flush=True)

    asyncio.run(main())
    """
)

REPLICAS = 3


def table_versions(uri: str, table: str) -> list[int]:
    with psycopg.connect(uri) as conn:
        return [row[0] for row in conn.execute(f"SELECT v FROM {table} ORDER BY v").fetchall()]


def test_replicas_migrating_at_once_all_start(database: str) -> None:
    processes = [
        subprocess.Popen(
            [sys.executable, "-c", REPLICA, database],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(REPLICAS)
    ]
    try:
        for process in processes:
            assert process.stdout is not None
            assert process.stdout.readline().strip() == "ready"
        for process in processes:
            assert process.stdin is not None
            process.stdin.write("go\n")
            process.stdin.flush()
        results = [process.communicate(timeout=120) for process in processes]
    finally:
        for process in processes:
            if process.poll() is None:
                process.kill()
    for process, (stdout, stderr) in zip(processes, results, strict=True):
        assert process.returncode == 0, stderr
        assert stdout.strip() == "migrated", stderr

    from langgraph.checkpoint.postgres.base import BasePostgresSaver
    from langgraph.store.postgres.base import BasePostgresStore

    assert table_versions(database, "checkpoint_migrations") == list(
        range(len(BasePostgresSaver.MIGRATIONS))
    )
    assert table_versions(database, "store_migrations") == list(
        range(len(BasePostgresStore.MIGRATIONS))
    )
    assert table_versions(database, "lgos_migrations") == list(range(len(MIGRATIONS)))
    with psycopg.connect(database) as conn:
        invalid = conn.execute("SELECT count(*) FROM pg_index WHERE NOT indisvalid").fetchone()
    # An interrupted CREATE INDEX CONCURRENTLY leaves an invalid index behind.
    assert invalid == (0,)
