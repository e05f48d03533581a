"""A test registry whose approval graph records its side effect in PostgreSQL.

Two `lgos serve` processes share the database, so a row per side effect lets a test count
how many times the act node really ran, across processes.
"""

from __future__ import annotations

import os
from typing import Any

import psycopg
from langchain_core.messages import AIMessage
from langgraph.graph import MessagesState
from langgraph.pregel import Pregel
from langgraph.types import interrupt

from lgos import GraphConfig, GraphFeature, GraphRegistry, ServerResources
from tests.support.graphs import linear_graph

MODEL = "counted-approval"
SIDE_EFFECTS_TABLE = "lgos_test_side_effects"


class CountedState(MessagesState):
    decision: str


def counted_approval_graph(checkpointer: Any, database_uri: str) -> Pregel:
    async def review(state: CountedState) -> dict[str, Any]:
        return {"decision": str(interrupt({"question": "Run the side effect?"}))}

    async def act(state: CountedState) -> dict[str, Any]:
        async with await psycopg.AsyncConnection.connect(database_uri, autocommit=True) as conn:
            await conn.execute(
                f"INSERT INTO {SIDE_EFFECTS_TABLE} (decision) VALUES (%s)", (state["decision"],)
            )
        return {"messages": [AIMessage(content=f"done: {state['decision']}")]}

    return linear_graph({"review": review, "act": act}, CountedState, checkpointer)


def create_registry(resources: ServerResources) -> GraphRegistry:
    database_uri = os.environ["LGOS_POSTGRES_URI"]
    with psycopg.connect(database_uri, autocommit=True) as conn:
        conn.execute(f"CREATE TABLE IF NOT EXISTS {SIDE_EFFECTS_TABLE} (decision text NOT NULL)")
    return GraphRegistry(
        graphs={
            MODEL: GraphConfig(
                graph=counted_approval_graph(resources.checkpointer, database_uri),
                description="Asks before running a side effect it records in PostgreSQL.",
                features=frozenset({GraphFeature.INTERRUPTS}),
            )
        },
        run_coordinator=resources.run_coordinator,
    )
