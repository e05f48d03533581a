"""Which SQL statements a Hatchet burst costs, the engine + graph floor beside LGOS (not a test).

    uv run --with-requirements benchmarks/requirements.txt \\
        python -m benchmarks.durable.engine_statements [--burst 100] [--passes 2]

Needs `pg_stat_statements` loaded by the PostgreSQL server the benchmarks use (the admin URI of
`deployments`): `ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'`, a restart,
then `CREATE EXTENSION pg_stat_statements` in its `postgres` database. Starts a Hatchet engine,
the floor's two workers and one LGOS deployment of this checkout (`lgos serve`, two `lgos
worker`), and for each pass runs a floor burst and an LGOS streamed burst (the goals' way, as
`hatchet_ab`), each after resetting the statistics. Prints, per burst: runs/s, the CPU per run
of each party (the floor's or LGOS's processes, the engine, PostgreSQL, this client), the
statements per run of the engine's database and of the run's own database, and the engine's
statements LGOS adds or saves against the floor, by the engine's query name.

Statements are what this found that CPU figures could not say: in issue 29's tenth round it
showed the engine creating one task per trigger call (`CreateTasks` 1.0 per run), which led to
batching LGOS's triggers.
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import time
from collections import defaultdict
from contextlib import ExitStack
from pathlib import Path

import psycopg

from benchmarks.durable.deployments import (
    ADMIN_URI,
    cpu_seconds,
    database,
    engine_settings,
    environment,
    exported,
    started,
    stop_children_on_sigterm,
    tree_cpu_seconds,
)
from benchmarks.durable.floor_worker import CHECKPOINT_URI_VARIABLE
from benchmarks.durable.floors import HatchetFloor, floor_workers
from benchmarks.durable.hatchet_ab import (
    Target,
    dbname,
    engine_process,
    postgres_cpu,
    set_up_saver,
)
from benchmarks.durable.lgos_runs import lgos_burst_streamed

_QUERY_NAME = re.compile(r"-- name: (\w+)")

# database name, calls, total execution ms, query text
Row = tuple[str, int, float, str]


def _require_statistics() -> None:
    with psycopg.connect(ADMIN_URI, autocommit=True) as conn:
        loaded = conn.execute("SHOW shared_preload_libraries").fetchone()
        installed = conn.execute(
            "SELECT 1 FROM pg_extension WHERE extname = 'pg_stat_statements'"
        ).fetchone()
    if loaded is None or "pg_stat_statements" not in str(loaded[0]) or installed is None:
        raise SystemExit(
            "pg_stat_statements is not loaded and created in the admin database: "
            "see this module's docstring"
        )


def _reset() -> None:
    with psycopg.connect(ADMIN_URI, autocommit=True) as conn:
        conn.execute("SELECT pg_stat_statements_reset()")


def _statements(databases: list[str]) -> list[Row]:
    with psycopg.connect(ADMIN_URI, autocommit=True) as conn:
        rows = conn.execute(
            "SELECT d.datname, s.calls, s.total_exec_time, s.query FROM pg_stat_statements s "
            "JOIN pg_database d ON d.oid = s.dbid WHERE d.datname = ANY(%s)",
            (databases,),
        ).fetchall()
    return [(str(name), int(calls), float(ms), str(query)) for name, calls, ms, query in rows]


def _name(query: str) -> str:
    """The engine's sqlc query name, or the statement's first words."""
    found = _QUERY_NAME.search(query)
    return found[1] if found else re.sub(r"\s+", " ", query.strip())[:70]


def _by_name(rows: list[Row], database: str, runs: int) -> dict[str, tuple[float, float]]:
    """Per run: (calls, execution ms) by query name, in one database."""
    totals: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for name, calls, ms, query in rows:
        if name == database:
            totals[_name(query)][0] += calls / runs
            totals[_name(query)][1] += ms / runs
    return {name: (calls, ms) for name, (calls, ms) in totals.items()}


def _print_database(label: str, per_run: dict[str, tuple[float, float]], top: int) -> None:
    calls = sum(value[0] for value in per_run.values())
    ms = sum(value[1] for value in per_run.values())
    print(f"  {label}: {calls:.1f} statements, {ms:.2f} ms of execution per run")
    for name, (each_calls, each_ms) in sorted(per_run.items(), key=lambda kv: -kv[1][1])[:top]:
        print(f"    {each_calls:6.2f} {each_ms:7.3f} ms  {name}")


async def _measure(args: argparse.Namespace, stack: ExitStack) -> None:
    hatchet_env = stack.enter_context(engine_settings("hatchet"))
    stack.enter_context(exported(hatchet_env))  # the floor's client in this process
    engine = engine_process(hatchet_env)
    target = Target(stack, Path.cwd(), "lgos", hatchet_env)
    floor_uri = stack.enter_context(database())
    await set_up_saver(floor_uri)
    floor_processes = floor_workers(
        "hatchet", environment(**hatchet_env, **{CHECKPOINT_URI_VARIABLE: floor_uri})
    )
    stack.enter_context(started(floor_processes, r"floor\.ready"))
    engine_db = dbname(engine.environ()["DATABASE_URL"].split("?")[0])
    own_db = {"floor": dbname(floor_uri), "lgos": dbname(target.uri)}
    floor = HatchetFloor()
    parties = {"floor": floor_processes, "lgos": [target.api, *target.workers]}

    async def burst(name: str) -> float:
        if name == "floor":
            return await floor.burst(args.burst, graph=True)
        return await lgos_burst_streamed(target.client, args.burst)

    for name in parties:  # warm-up
        await burst(name)
    for number in range(1, args.passes + 1):
        engine_statements: dict[str, dict[str, tuple[float, float]]] = {}
        for name, processes in parties.items():
            databases = [engine_db, own_db[name]]
            _reset()
            before = (
                cpu_seconds(processes),
                tree_cpu_seconds([engine.pid]),
                postgres_cpu(databases),
                time.process_time(),
            )
            rate = await burst(name)
            after = (
                cpu_seconds(processes),
                tree_cpu_seconds([engine.pid]),
                postgres_cpu(databases),
                time.process_time(),
            )
            own, engine_cpu, postgres, client = (
                (b - a) * 1000 / args.burst for a, b in zip(before, after, strict=True)
            )
            rows = _statements(databases)
            print(
                f"\npass {number}, {name}: {rate:.1f} runs/s; CPU per run: its processes "
                f"{own:.1f} ms, engine {engine_cpu:.1f}, PostgreSQL {postgres:.1f}, "
                f"client {client:.1f}"
            )
            engine_statements[name] = _by_name(rows, engine_db, args.burst)
            _print_database("engine database", engine_statements[name], args.top)
            _print_database("run database", _by_name(rows, own_db[name], args.burst), args.top)
        print(f"\npass {number}: engine statements per run, LGOS less the floor (calls, ms)")
        floor_rows, lgos_rows = engine_statements["floor"], engine_statements["lgos"]
        differences = {
            name: (
                lgos_rows.get(name, (0.0, 0.0))[0] - floor_rows.get(name, (0.0, 0.0))[0],
                lgos_rows.get(name, (0.0, 0.0))[1] - floor_rows.get(name, (0.0, 0.0))[1],
            )
            for name in floor_rows.keys() | lgos_rows.keys()
        }
        for name, (calls, ms) in sorted(differences.items(), key=lambda kv: -abs(kv[1][0]))[
            : args.top
        ]:
            print(f"    {calls:+6.2f} {ms:+7.3f} ms  {name}")
    await target.client.close()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--burst", type=int, default=100, help="runs per burst")
    parser.add_argument("--passes", type=int, default=2)
    parser.add_argument("--top", type=int, default=15, help="statements shown per list")
    args = parser.parse_args(argv)
    _require_statistics()
    stop_children_on_sigterm()
    with ExitStack() as stack:
        asyncio.run(_measure(args, stack))
    return 0


if __name__ == "__main__":
    sys.exit(main())
