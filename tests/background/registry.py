"""The registry the background tests serve: the demo's background graphs plus graphs whose
progress the tests observe and steer through PostgreSQL (the only thing API processes,
worker processes and the test share).

`gated-steps` runs step_1 → step_2 → step_3. Every step records, in `bg_test_steps`, that it
started and that it finished, with the process id that ran it. step_2 waits until the test
opens the gate named after the input (a row in `bg_test_gates`), so a test can cancel it or
kill its worker while it waits, then let it go on.
"""

from __future__ import annotations

import asyncio
import os
from typing import Any

import psycopg
from langchain_core.messages import AIMessage
from langgraph.graph import MessagesState
from langgraph.pregel import Pregel

from demo.graphs.everything import everything_agent_graph
from demo.graphs.fake_model import last_user_text
from demo.graphs.review import DelaySettings, background_interrupt_graph, background_mock_graph
from demo.registry import EVERYTHING, EVERYTHING_ANSWER
from lgos import GraphConfig, GraphFeature, GraphRegistry, ServerResources
from tests.support.graphs import linear_graph, single_node

BACKGROUND = GraphFeature.BACKGROUND
SCHEMA = (
    "CREATE TABLE IF NOT EXISTS bg_test_steps ("
    " topic text NOT NULL, step text NOT NULL, event text NOT NULL, pid integer NOT NULL,"
    " at timestamptz NOT NULL DEFAULT clock_timestamp())",
    "CREATE TABLE IF NOT EXISTS bg_test_gates (topic text PRIMARY KEY)",
)
GATE_POLL_SECONDS = 0.05


class StepsState(MessagesState):
    topic: str
    done: list[str]


async def _record(uri: str, topic: str, step: str, event: str) -> None:
    async with await psycopg.AsyncConnection.connect(uri, autocommit=True) as conn:
        await conn.execute(
            "INSERT INTO bg_test_steps (topic, step, event, pid) VALUES (%s, %s, %s, %s)",
            (topic, step, event, os.getpid()),
        )


async def _wait_for_gate(uri: str, topic: str) -> None:
    async with await psycopg.AsyncConnection.connect(uri, autocommit=True) as conn:
        while True:
            cursor = await conn.execute("SELECT 1 FROM bg_test_gates WHERE topic = %s", (topic,))
            if await cursor.fetchone() is not None:
                return
            await asyncio.sleep(GATE_POLL_SECONDS)


def gated_steps_graph(uri: str) -> Pregel:
    def step(name: str, gated: bool = False) -> Any:
        async def run(state: StepsState) -> dict[str, Any]:
            topic = state.get("topic") or last_user_text(state["messages"])
            await _record(uri, topic, name, "started")
            try:
                if gated:
                    await _wait_for_gate(uri, topic)
            except asyncio.CancelledError:
                await _record(uri, topic, name, "cancelled")
                raise
            await _record(uri, topic, name, "finished")
            update: dict[str, Any] = {"topic": topic, "done": [*state.get("done", []), name]}
            if name == "step_3":
                text = f"Steps done for {topic}: {', '.join(update['done'])}"
                update["messages"] = [AIMessage(content=text)]
            return update

        return run

    steps = {
        "step_1": step("step_1"),
        "step_2": step("step_2", gated=True),
        "step_3": step("step_3"),
    }
    return linear_graph(steps, StepsState)


def failing_graph() -> Pregel:
    async def explode(state: MessagesState) -> dict[str, Any]:
        raise RuntimeError("secret internal detail")

    return single_node(explode)


def create_registry(resources: ServerResources) -> GraphRegistry:
    uri = resources.settings.POSTGRES_URI
    if not uri:
        raise RuntimeError("the background test registry needs LGOS_POSTGRES_URI")
    with psycopg.connect(uri, autocommit=True) as conn:
        for statement in SCHEMA:
            conn.execute(statement)
    checkpointer = resources.checkpointer
    return GraphRegistry(
        graphs={
            "background-mock": GraphConfig(
                graph=background_mock_graph(),
                description="Waits delay_seconds, then writes a report.",
                features=frozenset({BACKGROUND}),
                client_settings=DelaySettings,
            ),
            "background-interrupt": GraphConfig(
                graph=background_interrupt_graph(checkpointer),
                description="Prepares a report, asks for approval, then finishes it.",
                features=frozenset({BACKGROUND, GraphFeature.INTERRUPTS}),
                client_settings=DelaySettings,
            ),
            "gated-steps": GraphConfig(
                graph=gated_steps_graph(uri),
                description="Three steps; the second waits for the test's gate.",
                features=frozenset({BACKGROUND}),
            ),
            # The same steps for a client that cannot ask for the background (A2A): a long task
            # of the engine by default.
            "long-steps": GraphConfig(
                graph=gated_steps_graph(uri),
                description="The gated steps, in the background by default.",
                features=frozenset({BACKGROUND}),
                background_by_default=True,
            ),
            # A graph that pauses, for the same clients: the pause and its answer are Responses
            # of the engine too.
            "long-review": GraphConfig(
                graph=background_interrupt_graph(checkpointer),
                description="background-interrupt, in the background by default.",
                features=frozenset({BACKGROUND, GraphFeature.INTERRUPTS}),
                client_settings=DelaySettings,
                background_by_default=True,
            ),
            "failing": GraphConfig(
                graph=failing_graph(),
                description="Always raises.",
                features=frozenset({BACKGROUND}),
            ),
            "everything-background": GraphConfig(
                graph=everything_agent_graph(),
                description="The demo's everything-agent, allowed in the background.",
                features=EVERYTHING | {BACKGROUND},
                output_schema=EVERYTHING_ANSWER,
            ),
            "foreground-only": GraphConfig(
                graph=background_mock_graph(),
                description="Does not run in the background.",
                client_settings=DelaySettings,
            ),
        },
        run_coordinator=resources.run_coordinator,
    )
