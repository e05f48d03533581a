"""`lgos serve sample_app.registry:create_registry`, run from `tests/server/`.

The node logs through the package's own logger (shown at INFO because it is the registry's
top-level package) and through an unrelated logger (shown only from WARNING).
"""

from __future__ import annotations

import logging
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.graph import END, START, MessagesState, StateGraph

from lgos import GraphConfig, GraphRegistry, ServerResources

ANSWER = "Hello from the sample app."
logger = logging.getLogger("sample_app.graph")


async def answer(state: MessagesState) -> dict[str, Any]:
    logger.info("sample_app.node.answering", extra={"node": "answer"})
    logging.getLogger("noisy_dependency").info("noisy_dependency.detail")
    return {"messages": [AIMessage(content=ANSWER)]}


def create_registry(resources: ServerResources) -> GraphRegistry:
    builder = StateGraph(MessagesState)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    builder.add_edge("answer", END)
    return GraphRegistry(
        graphs={"sample": GraphConfig(graph=builder.compile(), description="Says hello.")},
        run_coordinator=resources.run_coordinator,
    )
