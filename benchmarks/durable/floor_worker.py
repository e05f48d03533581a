"""The engine floors' workers: each engine alone, without LGOS, running two jobs.

    LGOS_BENCH_CHECKPOINT_URI=<postgresql URI> \
        python -m benchmarks.durable.floor_worker dbos <system database URL> <executor id>
    LGOS_BENCH_CHECKPOINT_URI=<postgresql URI> \
        python -m benchmarks.durable.floor_worker hatchet <name>

The jobs: a no-op (the engine floor), and the demo's `background-mock` graph run on LangGraph's
`AsyncPostgresSaver` with `durability="sync"`, as a user of the engine would run a graph in it
with nothing of LGOS (the engine + graph floor: one DBOS step, or one Hatchet task). The saver
writes to the database that URI names, whose tables the benchmark set up.

`just bench-durable` starts two of each, beside LGOS's own workers, with the same slots and
the same queue settings as `lgos worker`, and prints `floor.ready` once the worker takes jobs.
The client half (enqueue or trigger, then wait for the result) lives in `benchmarks.durable.floors`.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from hatchet_sdk import Context, EmptyModel

# The floor's names, distinct from LGOS's so the two never take each other's jobs.
DBOS_WORKFLOW = "lgos-bench.noop"
DBOS_GRAPH_WORKFLOW = "lgos-bench.graph"
DBOS_QUEUE = "lgos-bench-floor"
DBOS_VERSION = "lgos-bench-floor-1"
HATCHET_TASK = "lgos-bench-noop"
HATCHET_GRAPH_TASK = "lgos-bench-graph"
SLOTS = 4  # LGOS_WORKER_SLOTS' default
CHECKPOINT_URI_VARIABLE = "LGOS_BENCH_CHECKPOINT_URI"


def graph_config(model: str) -> dict[str, Any]:
    """A fresh thread, and the demo request that sets the graphs' delay to 0."""
    from langchain_core.messages import HumanMessage

    from demo.graphs.review import DelaySettings
    from lgos.core.request import GraphRequest
    from lgos.run.nodes import REQUEST_CONFIG_KEY

    request = GraphRequest(
        model=model,
        messages=(HumanMessage("floor"),),
        settings=DelaySettings(delay_seconds=0),
    )
    return {"configurable": {"thread_id": uuid.uuid4().hex, REQUEST_CONFIG_KEY: request}}


class GraphRunner:
    """`background-mock` on LangGraph's PostgreSQL saver, run as LangGraph documents it."""

    def __init__(self, checkpointer: Any) -> None:
        from demo.graphs.review import background_mock_graph

        self.graph = background_mock_graph().copy({"checkpointer": checkpointer})

    async def run(self, text: str) -> str:
        from langchain_core.messages import HumanMessage

        final = await self.graph.ainvoke(
            {"messages": [HumanMessage(text)]}, graph_config("background-mock"), durability="sync"
        )
        return str(final["messages"][-1].content)


@asynccontextmanager
async def graph_runner() -> AsyncIterator[GraphRunner]:
    """A runner on a pool of one connection per slot, opened on the running event loop."""
    from langgraph.checkpoint.postgres.aio import AsyncPostgresSaver
    from psycopg.rows import dict_row
    from psycopg_pool import AsyncConnectionPool

    async with AsyncConnectionPool(
        os.environ[CHECKPOINT_URI_VARIABLE],
        min_size=SLOTS,
        max_size=SLOTS,
        kwargs={"autocommit": True, "row_factory": dict_row, "prepare_threshold": 0},
        open=False,
    ) as pool:
        yield GraphRunner(AsyncPostgresSaver(pool))


_dbos_runner: GraphRunner | None = None  # the DBOS floor worker's, set before DBOS launches


def register_dbos_workflows() -> None:
    """The no-op workflow and the graph's (both sides declare them; the client only needs
    their names)."""
    from dbos import DBOS, WorkflowSerializationFormat

    async def noop(index: int) -> dict[str, Any]:
        return {"index": index}

    async def run_graph_step(index: int) -> str:
        assert _dbos_runner is not None, "the floor worker sets its runner before launch"
        return await _dbos_runner.run(f"floor {index}")

    step = DBOS.step(name="lgos-bench.graph-step", retries_allowed=False)(run_graph_step)

    async def graph(index: int) -> dict[str, Any]:
        return {"text": await step(index)}

    portable = WorkflowSerializationFormat.PORTABLE
    DBOS.workflow(name=DBOS_WORKFLOW, serialization_type=portable)(noop)
    DBOS.workflow(name=DBOS_GRAPH_WORKFLOW, serialization_type=portable)(graph)


def hatchet_tasks(hatchet: Any) -> tuple[Any, Any]:
    """The no-op task and the graph's."""

    @hatchet.task(name=HATCHET_TASK, retries=0)
    async def noop(task_input: EmptyModel, ctx: Context) -> dict[str, Any]:
        return {"ok": True}

    @hatchet.task(name=HATCHET_GRAPH_TASK, retries=0)
    async def graph(task_input: EmptyModel, ctx: Context) -> dict[str, Any]:
        runner = ctx.lifespan
        assert isinstance(runner, GraphRunner), "the floor worker's lifespan yields its runner"
        return {"text": await runner.run("floor")}

    return noop, graph


async def _dbos_worker(url: str, executor_id: str) -> None:
    async with graph_runner() as runner:
        global _dbos_runner
        _dbos_runner = runner
        await _serve_dbos(url, executor_id)


async def _serve_dbos(url: str, executor_id: str) -> None:
    from dbos import DBOS

    from lgos.integrations.dbos import QUEUE_POLLING_INTERVAL_SECONDS

    register_dbos_workflows()
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
        async with graph_runner() as runner:
            print("floor.ready", flush=True)
            yield runner

    tasks = list(hatchet_tasks(hatchet))
    hatchet.worker(name, slots=SLOTS, workflows=tasks, lifespan=lifespan).start()


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
