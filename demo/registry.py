"""The demo registry: `lgos serve demo.registry:create_registry`."""

from __future__ import annotations

from demo.corpus.web import corpus_router
from demo.graphs.chat import (
    LongStreamSettings,
    SimpleSettings,
    multi_node_streaming_graph,
    simple_graph,
    status_events_graph,
    streaming_long_graph,
)
from demo.graphs.deep_research import TOOL_NAMES, ResearchSettings, deep_research_graph
from demo.graphs.everything import everything_agent_graph
from demo.graphs.review import (
    DelaySettings,
    background_interrupt_graph,
    background_mock_graph,
    interruptible_approval_graph,
)
from lgos import GraphConfig, GraphFeature, GraphRegistry, ServerResources

BACKGROUND = GraphFeature.BACKGROUND
# The answer shape everything-agent declares: an object a program reads.
EVERYTHING_ANSWER = {
    "type": "object",
    "properties": {
        "answer": {"type": "string", "description": "The agent's answer."},
        "confidence": {"type": "number", "description": "How sure it is, from 0 to 1."},
    },
    "required": ["answer", "confidence"],
    "additionalProperties": False,
}
INTERRUPTS = GraphFeature.INTERRUPTS
# Everything a client can send beyond text.
EVERYTHING = frozenset(
    {
        GraphFeature.STRUCTURED_OUTPUT,
        GraphFeature.IMAGE_INPUT,
        GraphFeature.FILE_INPUT,
        GraphFeature.REASONING,
    }
)


def create_registry(resources: ServerResources) -> GraphRegistry:
    if resources.app is not None:
        # The documents deep-research cites, as pages its citations open (not in a worker).
        resources.app.include_router(corpus_router())
    checkpointer = resources.checkpointer
    return GraphRegistry(
        graphs={
            "simple-graph": GraphConfig(
                graph=simple_graph(),
                description="Answers at once, streamed word by word; tone set per request.",
                client_settings=SimpleSettings,
            ),
            "multi-node-streaming": GraphConfig(
                graph=multi_node_streaming_graph(),
                description="Three nodes stream their parts in order.",
            ),
            "status-events": GraphConfig(
                graph=status_events_graph(),
                description="Reports progress as commentary, then answers.",
            ),
            "streaming-long-mock": GraphConfig(
                graph=streaming_long_graph(),
                description="A long, slow stream, to try stopping a run.",
                client_settings=LongStreamSettings,
            ),
            "interruptible-approval": GraphConfig(
                graph=interruptible_approval_graph(checkpointer),
                description="Asks a person to approve, reject or comment before acting.",
                features=frozenset({INTERRUPTS}),
            ),
            "background-mock": GraphConfig(
                graph=background_mock_graph(),
                description="Waits delay_seconds, then writes a report. Runs in the background.",
                features=frozenset({BACKGROUND}),
                client_settings=DelaySettings,
                background_by_default=True,
            ),
            "background-interrupt": GraphConfig(
                graph=background_interrupt_graph(checkpointer),
                description="Prepares a report, asks for approval, then finishes it.",
                features=frozenset({BACKGROUND, INTERRUPTS}),
                client_settings=DelaySettings,
            ),
            "everything-agent": GraphConfig(
                graph=everything_agent_graph(),
                description=(
                    "An agent around one model call that takes everything a client sends: "
                    "your function tools and tool_choice, a JSON schema for the answer, "
                    "images and files; it describes what it received and shows its reasoning."
                ),
                features=EVERYTHING,
                # What its MCP tool answers (`outputSchema`); OpenAI clients choose their own.
                output_schema=EVERYTHING_ANSWER,
            ),
            "deep-research": GraphConfig(
                graph=deep_research_graph(checkpointer),
                description=(
                    "Plans research questions, asks you to review the plan, researches a "
                    "small corpus with tools and writes a cited report. Runs in the background."
                ),
                features=frozenset({BACKGROUND, INTERRUPTS}),
                client_settings=ResearchSettings,
                server_tools=TOOL_NAMES,
                background_by_default=True,
            ),
        },
        run_coordinator=resources.run_coordinator,
    )
