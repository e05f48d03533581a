"""The engine floors' workers: each engine alone running a no-op job (no LGOS, no graph).

    python -m benchmarks.durable_floor dbos <system database URL> <executor id>
    python -m benchmarks.durable_floor hatchet <worker name>

`benchmarks.durable` starts two of each, beside LGOS's own workers, with the same slots and
the same queue settings as `lgos worker`, and prints `floor.ready` once the worker takes jobs.
The client half (enqueue or trigger, then wait for the result) lives in `benchmarks.durable`.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from typing import Any

from hatchet_sdk import Context, EmptyModel

# The floor's names, distinct from LGOS's so the two never take each other's jobs.
DBOS_WORKFLOW = "lgos-bench.noop"
DBOS_QUEUE = "lgos-bench-floor"
DBOS_VERSION = "lgos-bench-floor-1"
HATCHET_TASK = "lgos-bench-noop"
SLOTS = 4  # LGOS_WORKER_SLOTS' default


def register_dbos_workflow() -> Any:
    """The no-op workflow (both sides declare it; the client only needs its name)."""
    from dbos import DBOS, WorkflowSerializationFormat

    async def noop(index: int) -> dict[str, Any]:
        return {"index": index}

    return DBOS.workflow(
        name=DBOS_WORKFLOW, serialization_type=WorkflowSerializationFormat.PORTABLE
    )(noop)


def hatchet_task(hatchet: Any) -> Any:
    @hatchet.task(name=HATCHET_TASK, retries=0)
    async def noop(task_input: EmptyModel, ctx: Context) -> dict[str, Any]:
        return {"ok": True}

    return noop


async def _dbos_worker(url: str, executor_id: str) -> None:
    from dbos import DBOS

    from lgos.integrations.dbos import QUEUE_POLLING_INTERVAL_SECONDS

    register_dbos_workflow()
    DBOS(
        config={
            "name": "lgos-bench-floor",
            "system_database_url": url,
            "application_version": DBOS_VERSION,
            "executor_id": executor_id,
            "run_migrations": False,  # the benchmark migrated the database once
            "sys_db_pool_size": SLOTS + 4,
        }
    )
    DBOS.launch()
    await DBOS.register_queue_async(
        DBOS_QUEUE,
        worker_concurrency=SLOTS,
        polling_interval_sec=QUEUE_POLLING_INTERVAL_SECONDS,
        on_conflict="always_update",
    )
    print("floor.ready", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    await stop.wait()
    await asyncio.to_thread(DBOS.destroy, workflow_completion_timeout_sec=1)


def _hatchet_worker(name: str) -> None:
    from hatchet_sdk import Hatchet

    hatchet = Hatchet()

    async def lifespan() -> Any:
        print("floor.ready", flush=True)
        yield None

    hatchet.worker(name, slots=SLOTS, workflows=[hatchet_task(hatchet)], lifespan=lifespan).start()


def main() -> None:
    engine, *args = sys.argv[1:]
    if engine == "dbos":
        asyncio.run(_dbos_worker(*args))
    elif engine == "hatchet":
        _hatchet_worker(*args)
    else:
        raise SystemExit(f"unknown engine {engine!r}")


if __name__ == "__main__":
    main()
