"""Replicas starting together on an empty database migrate it once, without errors."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
import textwrap

import psycopg
import pytest
from pydantic import ValidationError

from lgos import ConfigurationError, ServerSettings, open_resources
from lgos.integrations.postgres import MIGRATIONS

pytestmark = [pytest.mark.postgres]

# Each process opens the resources once the test says "go" on stdin, so they really start
# their migrations at the same moment instead of one after the other.
REPLICA = textwrap.dedent(
    """
    import asyncio, sys
    from lgos import open_resources
    from lgos import ServerSettings

    async def main() -> None:
        settings = ServerSettings(POSTGRES_URI=sys.argv[1], POSTGRES_POOL_SIZE=2)
        print("ready", flush=True)
        sys.stdin.readline()
        async with open_resources(settings) as resources:
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


@pytest.mark.processes
@pytest.mark.timeout(600)
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


class _Waiting(logging.Handler):
    """Sets an event when LGOS reports that it waits for another replica's migrations."""

    def __init__(self) -> None:
        super().__init__()
        self.seen = asyncio.Event()

    def emit(self, record: logging.LogRecord) -> None:
        if record.getMessage() == "postgres.migrations.waiting":
            self.seen.set()


@pytest.mark.anyio
async def test_a_waiting_replica_never_blocks_the_migrating_ones_index_builds(
    database: str,
) -> None:
    """While one replica migrates (here: the test, holding the lock and building an index
    concurrently), another waits for the lock without making the index build wait for it."""
    waiting = _Waiting()
    logger = logging.getLogger("lgos.postgres")
    logger.addHandler(waiting)
    previous_level = logger.level
    logger.setLevel(logging.INFO)
    try:
        async with await psycopg.AsyncConnection.connect(database, autocommit=True) as holder:
            await holder.execute(
                "SELECT pg_advisory_lock(hashtextextended(%s, 0))", ("lgos.migrations",)
            )
            await holder.execute("CREATE TABLE elsewhere (x int)")
            settings = ServerSettings(POSTGRES_URI=database, POSTGRES_POOL_SIZE=2)
            opened = asyncio.Event()
            done = asyncio.Event()

            async def replica() -> None:
                async with open_resources(settings):
                    opened.set()
                    await done.wait()

            task = asyncio.create_task(replica())
            await asyncio.wait_for(waiting.seen.wait(), 60)
            # The blocking pg_advisory_lock would deadlock here (PostgreSQL aborts one side).
            await asyncio.wait_for(
                holder.execute("CREATE INDEX CONCURRENTLY elsewhere_x ON elsewhere (x)"), 60
            )
            cur = await holder.execute("SELECT to_regclass('lgos_paused_runs')")
            assert await cur.fetchone() == (None,)  # it really waited
            await holder.execute(
                "SELECT pg_advisory_unlock(hashtextextended(%s, 0))", ("lgos.migrations",)
            )
            await asyncio.wait_for(opened.wait(), 60)
            done.set()
            await task
    finally:
        logger.removeHandler(waiting)
        logger.setLevel(previous_level)
    assert table_versions(database, "lgos_migrations") == list(range(len(MIGRATIONS)))


@pytest.mark.anyio
async def test_a_pool_of_one_connection_is_refused(database: str) -> None:
    with pytest.raises(ValidationError):
        ServerSettings(POSTGRES_URI=database, POSTGRES_POOL_SIZE=1)
    # Settings built without validation are refused too, before any connection opens.
    settings = ServerSettings(POSTGRES_URI=database).model_copy(update={"POSTGRES_POOL_SIZE": 1})
    with pytest.raises(ConfigurationError, match="LGOS_POSTGRES_POOL_SIZE"):
        async with open_resources(settings):
            pytest.fail("opened with a pool that cannot hold a lease and write a checkpoint")
