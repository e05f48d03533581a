"""The demo registry, plus `everything-agent` under a second id for llm-comply's reasoning tests.

llm-comply runs `reasoning-summary` and `chat-reasoning-summary` only for a model id containing
"o1", "o3", "o4", "gpt-5" or "deepseek-r" (their `skip_reason`, in llm_comply/tests/
open_responses.py and openai_chat.py, 0.4.0 to 0.5.0); every other id is skipped, whatever the
model does. The same graph served as `everything-agent-o3` lets them run.
"""

from __future__ import annotations

import dataclasses

from demo.registry import create_registry as demo_registry
from lgos import GraphRegistry, ServerResources

AGENT_MODEL = "everything-agent"
# An id llm-comply takes for a reasoning model; the graph is the one served as AGENT_MODEL.
REASONING_ALIAS = "everything-agent-o3"


def create_registry(resources: ServerResources) -> GraphRegistry:
    registry = demo_registry(resources)
    graphs = {**registry.graphs, REASONING_ALIAS: registry.graphs[AGENT_MODEL]}
    return dataclasses.replace(registry, graphs=graphs)
