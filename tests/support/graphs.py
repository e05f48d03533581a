"""Graphs built for the contract tests. Each one makes one behaviour observable."""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Annotated, Any

from langchain_core.messages import AIMessage, BaseMessage, ToolMessage
from langgraph.checkpoint.memory import InMemorySaver
from langgraph.constants import TAG_NOSTREAM
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.pregel import Pregel
from langgraph.types import interrupt
from pydantic import BaseModel

from demo.graphs.everything import everything_agent_graph
from demo.graphs.fake_model import ScriptedChatModel
from lgos import (
    ClientSettings,
    GraphConfig,
    GraphFeature,
    GraphRegistry,
    InMemoryRunCoordinator,
    InvalidRequestError,
    get_request,
    status_event,
)


def linear_graph(
    steps: dict[str, Any], state: type = MessagesState, checkpointer: Any = None
) -> Pregel:
    """START → each of `steps` in order → END (a step may itself be a compiled graph, which
    makes it a subgraph)."""
    builder = StateGraph(state)
    previous = START
    for name, step in steps.items():
        builder.add_node(name, step)
        builder.add_edge(previous, name)
        previous = name
    builder.add_edge(previous, END)
    return builder.compile(checkpointer=checkpointer)


def single_node(node: Any, state: type = MessagesState, checkpointer: Any = None) -> Pregel:
    """START → `node` → END: the graph of every test that needs one step."""
    return linear_graph({"node": node}, state, checkpointer)


def describe(messages: list[BaseMessage]) -> str:
    """The conversation as the graph saw it, e.g. `system:Be brief|human:hi`."""
    return "|".join(f"{message.type}:{message.text}" for message in messages)


@dataclass
class Probe:
    """Lets a test observe and steer a running graph without sleeping."""

    started: asyncio.Event = field(default_factory=asyncio.Event)
    release: asyncio.Event = field(default_factory=asyncio.Event)
    cancelled: asyncio.Event = field(default_factory=asyncio.Event)
    side_effects: list[str] = field(default_factory=list)


class EchoSettings(ClientSettings):
    prefix: str = "echo"
    repeat: int = 1


def echo_graph() -> Pregel:
    """Streams a description of the conversation it received."""

    async def node(state: MessagesState) -> dict[str, Any]:
        request = get_request()
        settings = request.settings
        assert isinstance(settings, EchoSettings)
        text = f"{settings.prefix}: " + describe(state["messages"]) * settings.repeat
        model = ScriptedChatModel(script=lambda _m: text)
        return {"messages": [await model.ainvoke(state["messages"])]}

    return single_node(node)


def tool_caller_graph() -> Pregel:
    """Asks the client to run its first tool; after a tool result, reports it."""

    async def node(state: MessagesState) -> dict[str, Any]:
        last = state["messages"][-1]
        if isinstance(last, ToolMessage):
            return {"messages": [AIMessage(content=f"The tool said: {last.text}")]}
        tools = get_request().tools
        if not tools:
            return {"messages": [AIMessage(content="No tools to call.")]}
        call = {"id": "call_weather_1", "name": tools[0].name, "args": {"city": "Paris"}}
        return {"messages": [AIMessage(content="", tool_calls=[call])]}

    return single_node(node)


def request_report_graph() -> Pregel:
    """Answers with what reached `get_request()` beyond the messages, as JSON."""

    async def node(state: MessagesState) -> dict[str, Any]:
        request = get_request()
        report = {
            "tool_choice": repr(request.tool_choice),
            "parallel_tool_calls": request.parallel_tool_calls,
            "tools": [tool.name for tool in request.tools],
            "hosted_tools": [dict(tool) for tool in request.hosted_tools],
            "response_format": repr(request.response_format),
            "truncation": request.truncation,
        }
        return {"messages": [AIMessage(content=json.dumps(report))]}

    return single_node(node)


def message_report_graph() -> Pregel:
    """Answers with the messages it received, content blocks and tool calls as they came."""

    async def node(state: MessagesState) -> dict[str, Any]:
        report = [
            {
                "type": message.type,
                "content": message.content,
                "tool_calls": [call["id"] for call in getattr(message, "tool_calls", ())],
            }
            for message in state["messages"]
        ]
        return {"messages": [AIMessage(content=json.dumps(report))]}

    return single_node(node)


def schema_breaker_graph() -> Pregel:
    """Declares structured output but answers `{"city": 42}` whatever the schema says."""

    async def node(state: MessagesState) -> dict[str, Any]:
        model = ScriptedChatModel(script=lambda _m: '{"city": 42}')
        return {"messages": [await model.ainvoke(state["messages"])]}

    return single_node(node)


def failing_graph() -> Pregel:
    """Streams a few words, then raises."""

    async def node(state: MessagesState) -> dict[str, Any]:
        model = ScriptedChatModel(script=lambda _m: "partial answer")
        await model.ainvoke(state["messages"])
        raise RuntimeError("secret internal detail")

    return single_node(node)


def refusing_graph() -> Pregel:
    """Streams a few words, then refuses the request with an LGOS error of its own code."""

    async def node(state: MessagesState) -> dict[str, Any]:
        model = ScriptedChatModel(script=lambda _m: "partial answer")
        await model.ainvoke(state["messages"])
        raise InvalidRequestError("That city is not covered.", code="city_not_covered")

    return single_node(node)


def blocking_graph(probe: Probe) -> Pregel:
    """Streams one word, then waits for the test; records cancellation."""

    async def node(state: MessagesState) -> dict[str, Any]:
        first = ScriptedChatModel(script=lambda _m: "waiting")
        await first.ainvoke(state["messages"])
        probe.started.set()
        try:
            await probe.release.wait()
        except asyncio.CancelledError:
            probe.cancelled.set()
            raise
        return {"messages": [AIMessage(content="waiting released")]}

    return single_node(node)


def progress_graph() -> Pregel:
    async def node(state: MessagesState) -> dict[str, Any]:
        status_event("Step one")
        status_event("Step two")
        return {"messages": [AIMessage(content="All done.")]}

    return single_node(node)


def cited_graph() -> Pregel:
    async def node(state: MessagesState) -> dict[str, Any]:
        text = "LangGraph runs graphs. It streams."
        block = {
            "type": "text",
            "text": text,
            "annotations": [
                {
                    "type": "citation",
                    "url": "https://example.org/langgraph",
                    "title": "LangGraph",
                    "start_index": 0,
                    "end_index": 22,
                }
            ],
        }
        return {"messages": [AIMessage(content=[block])]}

    return single_node(node)


class ApprovalState(MessagesState):
    decision: str


def approval_graph(checkpointer: Any, probe: Probe) -> Pregel:
    """ask → act; the side effect (a counter) happens only in `act`, after the answer."""

    async def ask(state: ApprovalState) -> dict[str, Any]:
        answer = interrupt({"question": "Approve?", "choices": ["approve", "reject"]})
        return {"decision": str(answer)}

    async def act(state: ApprovalState) -> dict[str, Any]:
        if state["decision"] == "approve":
            probe.side_effects.append("done")
            return {"messages": [AIMessage(content="Approved and done.")]}
        return {"messages": [AIMessage(content=f"Not done: {state['decision']}.")]}

    return linear_graph({"ask": ask, "act": act}, ApprovalState, checkpointer)


def two_questions_graph(checkpointer: Any) -> Pregel:
    """One node asks two questions in a row (LangGraph 1.2 gives each its own id)."""

    async def node(state: MessagesState) -> dict[str, Any]:
        name = interrupt({"question": "Name?"})
        color = interrupt({"question": "Favourite colour?"})
        return {"messages": [AIMessage(content=f"{name} likes {color}.")]}

    return single_node(node, checkpointer=checkpointer)


class Booking(BaseModel):
    seats: int
    seat_class: str


def schema_graph(checkpointer: Any) -> Pregel:
    async def node(state: MessagesState) -> dict[str, Any]:
        booking = interrupt({"question": "How many seats?"}, response_schema=Booking)
        return {"messages": [AIMessage(content=f"Booked {booking.seats} {booking.seat_class}.")]}

    return single_node(node, checkpointer=checkpointer)


def _merge(left: list[str], right: list[str]) -> list[str]:
    return sorted(left + right)


class ParallelState(MessagesState):
    answers: Annotated[list[str], _merge]


def parallel_graph(checkpointer: Any) -> Pregel:
    """Two nodes in one step each ask a question: both pause together."""

    def asker(label: str) -> Any:
        async def node(state: ParallelState) -> dict[str, Any]:
            return {"answers": [f"{label}={interrupt({'question': label})}"]}

        return node

    async def report(state: ParallelState) -> dict[str, Any]:
        return {"messages": [AIMessage(content=", ".join(state["answers"]))]}

    builder = StateGraph(ParallelState)
    builder.add_node("left", asker("left"))
    builder.add_node("right", asker("right"))
    builder.add_node("report", report)
    builder.add_edge(START, "left")
    builder.add_edge(START, "right")
    builder.add_edge(["left", "right"], "report")
    builder.add_edge("report", END)
    return builder.compile(checkpointer=checkpointer)


def private_calls_graph() -> Pregel:
    """A planning call tagged `nostream`, then the answer: only the answer streams."""
    planner = ScriptedChatModel(script=lambda _m: "secret plan").with_config(tags=[TAG_NOSTREAM])
    writer = ScriptedChatModel(script=lambda _m: "the public answer")

    async def node(state: MessagesState) -> dict[str, Any]:
        await planner.ainvoke(state["messages"])
        return {"messages": [await writer.ainvoke(state["messages"])]}

    return single_node(node)


def subgraph_graph() -> Pregel:
    """The answer is streamed by a model inside a subgraph."""
    inner = echo_graph()

    return single_node(inner)


def metered_graph() -> Pregel:
    async def node(state: MessagesState) -> dict[str, Any]:
        usage = {
            "input_tokens": 12,
            "output_tokens": 3,
            "total_tokens": 15,
            "input_token_details": {"cache_read": 4},
            "output_token_details": {"reasoning": 1},
        }
        return {"messages": [AIMessage(content="metered", usage_metadata=usage)]}

    return single_node(node)


def counted_graph(checkpointer: Any = None, *, review: bool = False) -> Pregel:
    """Two model calls (a private plan, then the answer), optionally a review in between.

    With the word-count fake model and input "count": the plan costs 1 in + 2 out, the answer
    1 in + 3 out.
    """

    async def plan(state: MessagesState) -> dict[str, Any]:
        model = ScriptedChatModel(script=lambda _m: "plan ready").with_config(tags=[TAG_NOSTREAM])
        await model.ainvoke(state["messages"][:1])
        return {}

    async def answer(state: MessagesState) -> dict[str, Any]:
        if review:
            interrupt("Answer now?")
        model = ScriptedChatModel(script=lambda _m: "one two three")
        return {"messages": [await model.ainvoke(state["messages"][:1])]}

    return linear_graph({"plan": plan, "answer": answer}, checkpointer=checkpointer)


def build_registry(probe: Probe, *, checkpointer: Any = None) -> GraphRegistry:
    checkpointer = checkpointer or InMemorySaver()
    interrupts = frozenset({GraphFeature.INTERRUPTS})
    return GraphRegistry(
        graphs={
            "echo": GraphConfig(
                graph=echo_graph(), description="Echoes", client_settings=EchoSettings
            ),
            "tool-caller": GraphConfig(
                graph=tool_caller_graph(),
                description="Calls client tools",
                client_tools=frozenset({"get_weather"}),
            ),
            "failing": GraphConfig(graph=failing_graph(), description="Fails midway"),
            "refusing": GraphConfig(graph=refusing_graph(), description="Refuses midway"),
            "everything-agent": GraphConfig(
                graph=everything_agent_graph(),
                description="Takes everything a client sends",
                features=frozenset(
                    {
                        GraphFeature.STRUCTURED_OUTPUT,
                        GraphFeature.IMAGE_INPUT,
                        GraphFeature.FILE_INPUT,
                        GraphFeature.REASONING,
                    }
                ),
            ),
            "request-report": GraphConfig(
                graph=request_report_graph(),
                description="Reports what reached get_request()",
                hosted_tools=frozenset({"file_search", "mcp"}),
            ),
            "message-report": GraphConfig(
                graph=message_report_graph(), description="Reports the messages it received"
            ),
            "schema-breaker": GraphConfig(
                graph=schema_breaker_graph(),
                description="Claims structured output, answers off-schema",
                features=frozenset({GraphFeature.STRUCTURED_OUTPUT}),
            ),
            "blocking": GraphConfig(graph=blocking_graph(probe), description="Waits"),
            "progress": GraphConfig(graph=progress_graph(), description="Reports progress"),
            "cited": GraphConfig(graph=cited_graph(), description="Cites"),
            "private-calls": GraphConfig(graph=private_calls_graph(), description="Plans quietly"),
            "subgraph": GraphConfig(
                graph=subgraph_graph(),
                description="Streams from a subgraph",
                client_settings=EchoSettings,
            ),
            "metered": GraphConfig(graph=metered_graph(), description="Reports usage"),
            "counted": GraphConfig(
                graph=counted_graph(),
                description="Calls a model twice",
                features=frozenset({GraphFeature.BACKGROUND}),
            ),
            "counted-review": GraphConfig(
                graph=counted_graph(checkpointer, review=True),
                description="Calls a model, asks, calls it again",
                features=interrupts,
            ),
            "approval": GraphConfig(
                graph=approval_graph(checkpointer, probe), description="Asks", features=interrupts
            ),
            "two-questions": GraphConfig(
                graph=two_questions_graph(checkpointer),
                description="Asks twice",
                features=interrupts,
            ),
            "schema-question": GraphConfig(
                graph=schema_graph(checkpointer), description="Typed answer", features=interrupts
            ),
            "parallel-questions": GraphConfig(
                graph=parallel_graph(checkpointer),
                description="Asks two at once",
                features=interrupts,
            ),
        },
        run_coordinator=InMemoryRunCoordinator(),
    )


def decode_arguments(arguments: str) -> Any:
    return json.loads(arguments)
