"""The expiry sweep among 10,000 checkpointed threads: only expired LGOS pauses go."""

from __future__ import annotations

import time
from datetime import timedelta
from typing import Any

import psycopg
import pytest
from langchain_core.messages import HumanMessage

from demo.graphs.review import interruptible_approval_graph
from lgos import ServerSettings, delete_expired_interrupt_runs, open_resources

pytestmark = [pytest.mark.anyio, pytest.mark.postgres, pytest.mark.slow]

THREADS = 10_000
EXPIRED = 300  # LGOS runs paused longer ago than the TTL
YOUNG = 200  # LGOS runs paused recently
TTL = timedelta(days=30)
TABLES = ("checkpoints", "checkpoint_blobs", "checkpoint_writes")

# Thread ids like LGOS's (hex digests) for the paused runs; anything else for foreign threads
# that share the saver but were never in LGOS's pause index.
_THREAD_IDS = """
    SELECT i,
           CASE WHEN i <= %(lgos)s THEN encode(sha256(('lgos-run-' || i)::bytea), 'hex')
                ELSE 'foreign-thread-' || i END AS thread_id
    FROM generate_series(1, %(threads)s) AS i
"""


def clone_statement(table: str, columns: list[str]) -> str:
    """Copy every row of the template thread to each generated thread id."""
    others = [column for column in columns if column != "thread_id"]
    return (
        f"INSERT INTO {table} (thread_id, {', '.join(others)}) "
        f"SELECT ids.thread_id, {', '.join('t.' + c for c in others)} "
        f"FROM {table} AS t CROSS JOIN ({_THREAD_IDS}) AS ids WHERE t.thread_id = 'template'"
    )


async def columns_of(conn: psycopg.AsyncConnection[Any], table: str) -> list[str]:
    cur = await conn.execute(
        "SELECT column_name FROM information_schema.columns WHERE table_name = %s "
        "ORDER BY ordinal_position",
        (table,),
    )
    return [str(row[0]) for row in await cur.fetchall()]


async def rows_per_table(conn: psycopg.AsyncConnection[Any]) -> dict[str, int]:
    counts = {}
    for table in TABLES:
        cur = await conn.execute(f"SELECT count(*) FROM {table}")
        row = await cur.fetchone()
        assert row is not None
        counts[table] = int(row[0])
    return counts


async def thread_rows(conn: psycopg.AsyncConnection[Any], thread_ids: list[str]) -> int:
    total = 0
    for table in TABLES:
        cur = await conn.execute(
            f"SELECT count(*) FROM {table} WHERE thread_id = ANY(%s)", (thread_ids,)
        )
        row = await cur.fetchone()
        assert row is not None
        total += int(row[0])
    return total


async def test_the_sweep_deletes_only_expired_lgos_runs(
    module_database: str, record_property: Any
) -> None:
    settings = ServerSettings(POSTGRES_URI=module_database, POSTGRES_POOL_SIZE=6)
    async with (
        open_resources(settings) as resources,
        await psycopg.AsyncConnection.connect(module_database, autocommit=True) as conn,
    ):
        saver = resources.checkpointer
        graph = interruptible_approval_graph(saver)
        template = {"configurable": {"thread_id": "template"}}
        await graph.ainvoke({"messages": [HumanMessage("the template report")]}, template)
        assert (await graph.aget_state(template)).interrupts  # paused, as LGOS runs are

        params = {"lgos": EXPIRED + YOUNG, "threads": THREADS}
        for table in TABLES:
            await conn.execute(clone_statement(table, await columns_of(conn, table)), params)
        per_thread = {
            table: count // (THREADS + 1) for table, count in (await rows_per_table(conn)).items()
        }
        await conn.execute(
            f"INSERT INTO lgos_paused_runs (thread_id, paused_at) "
            f"SELECT thread_id, CASE WHEN i <= {EXPIRED} "
            f"  THEN now() - interval '31 days' - i * interval '1 second' "
            f"  ELSE now() - interval '1 hour' END "
            f"FROM ({_THREAD_IDS}) AS ids WHERE i <= %(lgos)s",
            params,
        )
        await conn.execute("ANALYZE")
        cur = await conn.execute("SELECT count(DISTINCT thread_id) FROM checkpoints")
        assert await cur.fetchone() == (THREADS + 1,)
        before = await rows_per_table(conn)
        cur = await conn.execute(
            "SELECT thread_id FROM lgos_paused_runs ORDER BY paused_at LIMIT %s", (EXPIRED,)
        )
        expired = [str(row[0]) for row in await cur.fetchall()]
        cur = await conn.execute(
            "SELECT thread_id FROM lgos_paused_runs ORDER BY paused_at OFFSET %s", (EXPIRED,)
        )
        young = [str(row[0]) for row in await cur.fetchall()]
        assert len(young) == YOUNG

        started = time.perf_counter()
        deleted = await delete_expired_interrupt_runs(
            saver, resources.run_coordinator, older_than=TTL
        )
        elapsed = time.perf_counter() - started
        record_property("sweep_seconds", round(elapsed, 3))
        print(
            f"\nexpiry sweep: deleted {deleted} expired runs among {THREADS + 1} threads "
            f"({before['checkpoints']} checkpoints) in {elapsed:.2f} s"
        )

        assert deleted == EXPIRED
        assert await thread_rows(conn, expired) == 0
        after = await rows_per_table(conn)
        assert after == {table: before[table] - EXPIRED * per_thread[table] for table in TABLES}
        cur = await conn.execute("SELECT thread_id FROM lgos_paused_runs")
        assert sorted(str(row[0]) for row in await cur.fetchall()) == sorted(young)

        # The survivors still read as paused runs through the real saver.
        for thread_id in (young[0], "foreign-thread-9999", "template"):
            state = await graph.aget_state({"configurable": {"thread_id": thread_id}})
            assert state.interrupts, thread_id
            assert state.values["topic"] == "the template report"
        # A second sweep finds nothing more to do.
        assert (
            await delete_expired_interrupt_runs(saver, resources.run_coordinator, older_than=TTL)
            == 0
        )
