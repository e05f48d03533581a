"""The one runner behind both OpenAI APIs: drive a graph, yield neutral run events.

Streaming requests read `messages` (every non-empty AI text chunk, subgraphs included; model
calls tagged `nostream` are skipped by LangGraph), `custom` (status events) and root `values`.
Non-streaming requests read root `values` only, which is what `ainvoke` does.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.runnables import RunnableConfig
from langgraph.errors import GraphRecursionError, is_invalid_resume
from langgraph.types import StreamMode
from opentelemetry import context as otel_context

from lgos.core.errors import GraphError, InvalidRequestError
from lgos.core.registry import CompiledGraph, GraphConfig
from lgos.core.request import GraphRequest
from lgos.core.run_events import (
    Citation,
    Commentary,
    Finished,
    Interrupted,
    PendingInterrupt,
    ReasoningDelta,
    RunEvent,
    TextDelta,
    reasoning_of,
)
from lgos.core.structured_output import check_answer
from lgos.run.nodes import STATUS_EVENT_TYPE
from lgos.run.telemetry import Workflow, run_callbacks
from lgos.run.usage import UsageCollector, collecting

logger = logging.getLogger("lgos.run")

_STREAM_MODES: list[StreamMode] = ["messages", "custom", "values"]
_INVOKE_MODES: list[StreamMode] = ["values"]


@dataclass(frozen=True, slots=True)
class Checkpointing:
    """How a checkpointed run is addressed: its LGOS run id and LangGraph thread id."""

    run_id: str
    thread_id: str
    # A thread-keeping graph's new turn starts from this checkpoint (None: the latest), and
    # its checkpoints are tagged with the turn (the Response id).
    checkpoint_id: str | None = None
    turn_id: str | None = None


def runnable_config(
    config: GraphConfig, request: GraphRequest, checkpointing: Checkpointing | None
) -> RunnableConfig:
    # Every key here is copied or merged into each child run's configuration (and metadata
    # into every callback manager), so the run carries only what something reads: the
    # request reaches nodes through `usage.collecting`, and tracers see the model in the run's
    # name. LangGraph's config payloads (`configurable`, `metadata`) hold values of any type.
    run_config = RunnableConfig(
        recursion_limit=config.recursion_limit,
        run_name=f"invoke_workflow {request.model}",  # as the OpenTelemetry span is named
    )
    metadata: dict[str, str] = {}
    if checkpointing is not None:
        configurable = {"thread_id": checkpointing.thread_id}
        metadata["lgos.run_id"] = checkpointing.run_id
        if checkpointing.checkpoint_id is not None:
            configurable["checkpoint_id"] = checkpointing.checkpoint_id
        if checkpointing.turn_id is not None:
            metadata["lgos.turn"] = checkpointing.turn_id
        run_config["configurable"] = configurable
    if request.conversation_id:
        metadata["langfuse_session_id"] = request.conversation_id
    if metadata:
        run_config["metadata"] = metadata
    callbacks = run_callbacks(request)  # tracing integrations (Langfuse), when enabled
    if callbacks:
        run_config["callbacks"] = callbacks
    return run_config


async def run_graph(
    config: GraphConfig,
    request: GraphRequest,
    *,
    streaming: bool,
    checkpointing: Checkpointing | None = None,
    graph_input: Any = None,
    graph: CompiledGraph | None = None,
) -> AsyncIterator[RunEvent]:
    """Run one graph execution and yield its events; the last one is terminal.

    `graph_input` overrides the adapter's input (a resume `Command`, or None to continue).
    """
    if graph is None:
        graph = await config.resolve_graph()
    if graph_input is None and checkpointing is None:
        graph_input = config.request_to_input(request)
    context: Any = config.context_factory(request) if config.context_factory else request.settings
    # Reaches the run, and carries the request to its nodes, through `collecting`.
    usage = UsageCollector(request)
    run_config = runnable_config(config, request, checkpointing)
    stream: AsyncGenerator[Any, None] = graph.astream(  # type: ignore[assignment]
        graph_input,
        run_config,
        stream_mode=_STREAM_MODES if streaming else _INVOKE_MODES,
        subgraphs=streaming,
        version="v2",
        context=context,
        durability=config.durability,
    )
    workflow = Workflow(request.model, request.conversation_id)
    streamed: list[str] = []
    output: Any = None
    # The interrupts of each root `values` part that carried some (one per interrupted task).
    raised: list[tuple[Any, ...]] = []
    # The span's context, attached around each step (None: nothing to attach), tested here
    # rather than in a call per step: a run takes a few steps, each paying these lines.
    span_context = workflow.context
    try:
        while True:
            token = None if span_context is None else otel_context.attach(span_context)
            counted = collecting.set(usage)
            try:
                part: Any = await anext(stream)
            except StopAsyncIteration:
                break
            finally:
                collecting.reset(counted)
                if token is not None:
                    otel_context.detach(token)
            kind = part["type"]
            if kind == "messages":
                chunk = part["data"][0]
                thought = reasoning_of(chunk) if isinstance(chunk, AIMessageChunk) else ""
                if thought:
                    yield ReasoningDelta(thought)
                text = _chunk_text(chunk)
                if text:
                    streamed.append(text)
                    yield TextDelta(text)
            elif kind == "values":
                if not part["ns"]:
                    output = part["data"]
                    if part.get("interrupts"):
                        raised.append(tuple(part["interrupts"]))
            elif kind == "custom":
                commentary = _commentary(part["data"])
                if commentary:
                    yield Commentary(commentary)
        if raised:
            # One task asked: its questions are the pending set, in the order it asked them.
            # Several: read the checkpoint, which lists them in a stable (task) order.
            pending = (
                _pending(raised[0])
                if len(raised) == 1
                else await _pending_interrupts(graph, run_config)
            )
            if pending:
                if checkpointing is None:
                    raise GraphError(f"{request.model} paused but does not declare interrupts")
                workflow.succeed()
                yield Interrupted(checkpointing.run_id, pending, "".join(streamed), usage.usage())
                return
        finished = _finish(config, request, output, "".join(streamed), usage)
        workflow.succeed()
    except GraphRecursionError as error:
        workflow.fail(error)
        raise GraphError(f"{request.model} hit its recursion limit") from error
    except BaseException as error:
        workflow.fail(error)
        translated = _translate(error)
        if translated is error:
            raise
        raise translated from error
    finally:
        await stream.aclose()
    # A stream gets the text no chunk carried (an answer written by a node, not streamed by a
    # model); a run read to its end (`streaming=False`) takes the text from `Finished`.
    if streaming and finished.text != "".join(streamed):
        yield TextDelta(finished.text[len("".join(streamed)) :])
    yield finished


def _chunk_text(message: Any) -> str:
    # Only model tokens stream. Whole messages that nodes write also appear in the `messages`
    # mode; the final one reaches the client through `Finished`, and the others are steps.
    if isinstance(message, AIMessageChunk):
        return plain_text(message)
    return ""


def plain_text(message: AIMessage) -> str:
    """The message's text as an exact `str`. LangChain's `message.text` is a `TextAccessor`,
    a `str` subclass that orjson refuses: every answer carrying it fell back from orjson to
    the slower pydantic-core writer (`lgos.http.rendering.answer_json`), and every text kept
    in a Response carried the subclass into the store."""
    return str(message.text)


def _commentary(data: Any) -> str | None:
    if isinstance(data, Mapping) and data.get("type") == STATUS_EVENT_TYPE:
        description = data.get("description")
        if isinstance(description, str) and description.strip():
            return description
    return None


def _finish(
    config: GraphConfig, request: GraphRequest, output: Any, streamed: str, usage: UsageCollector
) -> Finished:
    if output is None:
        raise GraphError("the graph produced no output")
    message = config.output_to_message(output)
    if not isinstance(message, AIMessage):
        raise GraphError(f"output_to_message returned {type(message).__name__}, not AIMessage")
    text = plain_text(message)
    # Clients see the streamed text first; the final answer must extend it, never contradict it.
    if streamed and not text.startswith(streamed):
        raise GraphError(
            "the streamed text differs from the final answer; tag private model calls "
            "with 'nostream' so only the answer streams"
        )
    if not message.tool_calls:  # a turn that calls tools answers later, in the format
        check_answer(text, request.response_format)
    return Finished(
        message,
        text,
        usage.usage(message),
        Citation.from_message(message),
        reasoning=reasoning_of(message),
    )


async def _pending_interrupts(
    graph: CompiledGraph, run_config: RunnableConfig
) -> tuple[PendingInterrupt, ...]:
    state = await graph.aget_state(run_config)
    return _pending(state.interrupts)


def _pending(interrupts: tuple[Any, ...]) -> tuple[PendingInterrupt, ...]:
    return tuple(
        PendingInterrupt(item.id, item.value, getattr(item, "response_schema", None))
        for item in interrupts
    )


def _translate(error: BaseException) -> BaseException:
    """Turn an invalid resume value (LangGraph's response_schema check) into a 400."""
    if isinstance(error, Exception) and is_invalid_resume(error):
        return InvalidRequestError(
            f"The answer does not match the question's response schema: {error}",
            param="input",
            code="invalid_value",
        )
    return error
