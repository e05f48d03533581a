"""The floors: the engines and LangGraph doing the same work with nothing of LGOS.

The engine floors' workers are `floor_worker` processes; their client half is here."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

from benchmarks.durable.deployments import PYTHON, Process
from benchmarks.durable.floor_worker import graph_config
from benchmarks.durable.timing import (
    BURST_POLL_SECONDS,
    IN_FLIGHT,
    POLL_SECONDS,
    burst_rate,
    median_ms,
)


class DBOSFloor:
    def __init__(self, url: str) -> None:
        from dbos import DBOSClient

        self.client = DBOSClient(system_database_url=url, application_name="lgos-bench-floor")

    def close(self) -> None:
        self.client.destroy()

    async def one(self, index: int, poll: float, *, graph: bool = False) -> None:
        from dbos import WorkflowSerializationFormat

        from benchmarks.durable.floor_worker import (
            DBOS_GRAPH_WORKFLOW,
            DBOS_QUEUE,
            DBOS_VERSION,
            DBOS_WORKFLOW,
        )

        handle = await self.client.enqueue_async(
            {
                "workflow_name": DBOS_GRAPH_WORKFLOW if graph else DBOS_WORKFLOW,
                "queue_name": DBOS_QUEUE,
                "app_version": DBOS_VERSION,
                "workflow_id": uuid.uuid4().hex,
                "serialization_type": WorkflowSerializationFormat.PORTABLE,
            },
            index,
        )
        await handle.get_result(polling_interval_sec=poll)

    async def latency(self, runs: int, *, graph: bool = False) -> float:
        seconds = []
        for index in range(runs):
            started = time.perf_counter()
            await self.one(index, POLL_SECONDS, graph=graph)
            seconds.append(time.perf_counter() - started)
        return median_ms(seconds)

    async def burst(self, burst: int, *, graph: bool = False) -> float:
        return await burst_rate(
            burst, lambda index: self.one(index, BURST_POLL_SECONDS, graph=graph)
        )


class HatchetFloor:
    def __init__(self) -> None:
        from hatchet_sdk import Hatchet

        from benchmarks.durable.floor_worker import hatchet_tasks

        self.hatchet = Hatchet()
        self.task, self.graph_task = hatchet_tasks(self.hatchet)

    async def latency(self, runs: int, *, graph: bool = False) -> float:
        task = self.graph_task if graph else self.task
        seconds = []
        for _ in range(runs):
            started = time.perf_counter()
            await task.aio_run()
            seconds.append(time.perf_counter() - started)
        return median_ms(seconds)

    async def latency_polled(self, runs: int, *, graph: bool = False) -> float:
        """Trigger, then read the run over REST every 10 ms until it shows completed: a
        client that polls, as LGOS's polled figures do (the floor of those, not a goal)."""
        from hatchet_sdk.clients.rest.exceptions import NotFoundException

        task = self.graph_task if graph else self.task
        seconds = []
        for _ in range(runs):
            started = time.perf_counter()
            ref = await task.aio_run(wait_for_result=False)
            while True:
                try:
                    status = await self.hatchet.runs.aio_get_status(ref.workflow_run_id)
                except NotFoundException:
                    status = None
                if getattr(status, "value", status) == "COMPLETED":
                    break
                await asyncio.sleep(POLL_SECONDS)
            seconds.append(time.perf_counter() - started)
        return median_ms(seconds)

    async def burst(self, burst: int, *, graph: bool = False) -> float:
        task = self.graph_task if graph else self.task
        in_flight = asyncio.Semaphore(IN_FLIGHT)

        async def one(index: int) -> None:
            async with in_flight:
                ref = await task.aio_run(wait_for_result=False)
            await ref.aio_result()

        return await burst_rate(burst, one)


class LangGraphFloors:
    """The checkpoint and review floors: the demo graphs on LangGraph's PostgreSQL saver."""

    def __init__(self, checkpointer: Any) -> None:
        from demo.graphs.review import background_interrupt_graph, background_mock_graph

        self.background = background_mock_graph().copy({"checkpointer": checkpointer})
        self.review = background_interrupt_graph(checkpointer)

    async def checkpoint(self, runs: int) -> float:
        from langchain_core.messages import HumanMessage

        seconds = []
        for index in range(runs):
            config = graph_config("background-mock")
            started = time.perf_counter()
            await self.background.ainvoke(
                {"messages": [HumanMessage(f"latency {index}")]}, config, durability="sync"
            )
            seconds.append(time.perf_counter() - started)
        return median_ms(seconds)

    async def review_round_trip(self, runs: int) -> float:
        from langchain_core.messages import HumanMessage
        from langgraph.types import Command

        seconds = []
        for index in range(runs):
            config = graph_config("background-interrupt")
            started = time.perf_counter()
            paused = await self.review.ainvoke(
                {"messages": [HumanMessage(f"review {index}")]}, config
            )
            assert paused.get("__interrupt__"), "the review graph did not pause"
            final = await self.review.ainvoke(Command(resume="approve"), config)
            assert final["messages"][-1].content, "the review graph gave no answer"
            seconds.append(time.perf_counter() - started)
        return median_ms(seconds)


def floor_workers(engine: str, env: dict[str, str], *args: str) -> list[Process]:
    return [
        Process(
            ["-m", "benchmarks.durable.floor_worker", engine, *args, f"floor-{index}"], env, PYTHON
        )
        for index in range(2)
    ]
