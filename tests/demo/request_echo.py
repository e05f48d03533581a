"""The far side of everything-agent's real-model path: an OpenAI-compatible `lgos serve` whose
one graph, `request-echo`, answers with what reached it, as a JSON object.

Served by `lgos serve tests.demo.request_echo:create_registry`; everything-agent's `ChatOpenAI`
(configured with DEMO_OPENAI_*) calls it as its model.
"""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage
from langgraph.graph import MessagesState
from langgraph.pregel import Pregel

from lgos import GraphConfig, GraphFeature, GraphRegistry, ServerResources, get_request
from tests.support.graphs import single_node


def _block(block: Any) -> dict[str, Any]:
    """A content block without its data, which the test compares by length."""
    summary = {key: value for key, value in block.items() if key != "base64"}
    if "base64" in block:
        summary["base64_length"] = len(block["base64"])
    return summary


def request_echo_graph() -> Pregel:
    async def node(state: MessagesState) -> dict[str, Any]:
        request = get_request()
        answer_format = request.response_format
        report = {
            "tools": [
                {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
                for tool in request.tools
            ],
            "tool_choice": repr(request.tool_choice),
            "parallel_tool_calls": request.parallel_tool_calls,
            "response_format": None
            if answer_format is None
            else {
                "type": answer_format.type,
                "name": answer_format.name,
                "schema": answer_format.schema,
                "strict": answer_format.strict,
            },
            "reasoning": None
            if request.reasoning is None
            else {"effort": request.reasoning.effort, "summary": request.reasoning.summary},
            "messages": [
                {"type": message.type, "blocks": [_block(b) for b in message.content_blocks]}
                for message in state["messages"]
            ],
        }
        return {"messages": [AIMessage(content=json.dumps(report, default=list))]}

    return single_node(node)


def create_registry(resources: ServerResources) -> GraphRegistry:
    return GraphRegistry(
        graphs={
            "request-echo": GraphConfig(
                graph=request_echo_graph(),
                description="Answers with the request it received",
                features=frozenset(
                    {
                        GraphFeature.STRUCTURED_OUTPUT,
                        GraphFeature.IMAGE_INPUT,
                        GraphFeature.FILE_INPUT,
                        GraphFeature.REASONING,
                    }
                ),
            )
        },
        run_coordinator=resources.run_coordinator,
    )
