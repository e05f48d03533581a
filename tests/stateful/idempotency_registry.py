"""A graph that counts its own executions, served by
`lgos serve tests.stateful.idempotency_registry:create_registry` for the Idempotency-Key tests.

Every execution appends its input's last line to the file `LGOS_TEST_RUNS_FILE` names (one line
per execution, whichever process ran it). An input that starts with `gated:` then waits until a
file of that name exists in `LGOS_TEST_GATE_DIR`, so a test can hold the first run while its
retries arrive.
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.graph import MessagesState

from lgos import GraphConfig, GraphRegistry, ServerResources
from tests.support.graphs import single_node

GATE_PATIENCE_SECONDS = 60.0


def _count(text: str) -> None:
    with Path(os.environ["LGOS_TEST_RUNS_FILE"]).open("a") as runs:
        runs.write(text + "\n")


def counted_graph() -> Any:
    async def node(state: MessagesState) -> dict[str, Any]:
        text = state["messages"][-1].text
        await asyncio.to_thread(_count, text)
        if text.startswith("gated:"):
            gate = Path(os.environ["LGOS_TEST_GATE_DIR"]) / text.removeprefix("gated:")
            async with asyncio.timeout(GATE_PATIENCE_SECONDS):
                # Another process opens the gate: a file is all both can see.
                while not gate.exists():  # noqa: ASYNC110
                    await asyncio.sleep(0.02)
        return {"messages": [AIMessage(content=f"ran {text} after {len(state['messages'])}")]}

    return single_node(node)


def create_registry(resources: ServerResources) -> GraphRegistry:
    return GraphRegistry(
        graphs={"counted": GraphConfig(graph=counted_graph(), description="Counts its runs")},
        run_coordinator=resources.run_coordinator,
    )
