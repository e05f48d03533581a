"""What a host registers: graphs, their features and their adapters."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, TypeAlias

import jsonschema
from langchain_core.messages import AIMessage, BaseMessage
from langgraph.pregel import Pregel
from langgraph.types import Durability

from lgos.core.client_settings import ClientSettings
from lgos.core.coordinator import RunCoordinator
from lgos.core.errors import ConfigurationError, GraphError, ModelNotFoundError
from lgos.core.request import GraphRequest


class GraphFeature(StrEnum):
    """Capabilities a graph opts into. Advertised in `/v1/models` so clients can adapt."""

    BACKGROUND = "background"
    INTERRUPTS = "interrupts"
    # The graph keeps its own state on a LangGraph thread: a conversation (by
    # `previous_response_id` or `conversation`) runs every turn on one thread and sends only
    # the new input. Needs the checkpointer, like INTERRUPTS.
    THREADS = "threads"
    # The graph answers in the JSON shape the client asks for (`text.format`,
    # `response_format`), reading it from `get_request().response_format`.
    STRUCTURED_OUTPUT = "structured_output"
    # The graph takes images / files in user messages, as LangChain standard content blocks
    # (`{"type": "image", "url" | "base64", ...}`, `{"type": "file", ...}`).
    IMAGE_INPUT = "image_input"
    FILE_INPUT = "file_input"
    # The graph's model reasons: `reasoning` options reach `get_request().reasoning`, and the
    # answer's LangChain `reasoning` blocks become Responses `reasoning` items.
    REASONING = "reasoning"


# A compiled LangGraph graph (StateGraph.compile() returns a Pregel subclass).
CompiledGraph: TypeAlias = Pregel[Any, Any, Any, Any]
GraphFactory = Callable[[], CompiledGraph | Awaitable[CompiledGraph]]


def default_input(request: GraphRequest) -> dict[str, Any]:  # the graph's input state
    return {"messages": list(request.messages)}


def default_output(output: Any) -> AIMessage:
    """The last message of `output["messages"]` is the answer."""
    messages = output.get("messages") if isinstance(output, Mapping) else None
    if messages is None:
        raise GraphError("graph output has no 'messages'; set GraphConfig.output_to_message")
    if not messages:
        return AIMessage(content="")
    last = messages[-1]
    if not isinstance(last, AIMessage):
        raise GraphError(f"the graph's last message is a {type(last).__name__}, not an AIMessage")
    return last


def check_output_schema(schema: Mapping[str, Any], features: frozenset[GraphFeature]) -> None:
    if GraphFeature.STRUCTURED_OUTPUT not in features:
        raise ConfigurationError("GraphConfig.output_schema needs the structured_output feature")
    if schema.get("type") != "object":
        raise ConfigurationError("GraphConfig.output_schema must be an object schema")
    try:
        jsonschema.validators.validator_for(schema).check_schema(dict(schema))
    except jsonschema.SchemaError as error:
        raise ConfigurationError(f"GraphConfig.output_schema: {error.message}") from None


@dataclass(frozen=True, slots=True)
class GraphConfig:
    """One servable graph.

    `graph` is a compiled graph, or a sync/async factory called per request (for graphs that
    depend on per-request resources). The adapters default to the messages convention: input
    `{"messages": [...]}`, answer = last AIMessage of `output["messages"]`.
    """

    graph: CompiledGraph | GraphFactory
    description: str
    features: frozenset[GraphFeature] = frozenset()
    client_settings: type[ClientSettings] | None = None
    request_to_input: Callable[[GraphRequest], Any] = default_input
    # Runtime context for `context_schema` graphs. Without a factory the validated client
    # settings (if any) are the context.
    context_factory: Callable[[GraphRequest], Any] | None = None
    output_to_message: Callable[[Any], BaseMessage] = default_output
    # Tool names the graph executes itself / client functions it may call (advertised only).
    server_tools: frozenset[str] = frozenset()
    client_tools: frozenset[str] = frozenset()
    # Hosted tool types (`web_search`, `file_search`, `mcp`, `code_interpreter`, ...) the graph
    # executes itself: requests may send them, and they reach `get_request().hosted_tools`.
    hosted_tools: frozenset[str] = frozenset()
    recursion_limit: int = 100
    # The graph is meant to run in the background (long work): UIs start it there unless the
    # user says otherwise. Advertised as `lgos.background_by_default`; needs BACKGROUND.
    background_by_default: bool = False
    # When LangGraph commits a checkpointed run's checkpoints (`astream`'s `durability`); None
    # keeps LangGraph's default ("async"). Background workers run every job with "sync".
    durability: Durability | None = None
    # The JSON Schema (an object) every answer of the graph matches, for a graph declaring
    # STRUCTURED_OUTPUT: protocols whose tools declare their result's shape (MCP's
    # `outputSchema`) ask the graph for it on every call, strictly, and hand back the object.
    output_schema: Mapping[str, Any] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "features", frozenset(GraphFeature(f) for f in self.features))
        object.__setattr__(self, "server_tools", frozenset(self.server_tools))
        object.__setattr__(self, "client_tools", frozenset(self.client_tools))
        object.__setattr__(self, "hosted_tools", frozenset(self.hosted_tools))
        if "function" in self.hosted_tools:
            raise ConfigurationError("GraphConfig.hosted_tools names hosted types, not 'function'")
        if not self.description.strip():
            raise ConfigurationError("GraphConfig.description must not be empty")
        if self.background_by_default and GraphFeature.BACKGROUND not in self.features:
            raise ConfigurationError(
                "GraphConfig.background_by_default needs the background feature"
            )
        if self.client_settings is not None:
            if not (
                isinstance(self.client_settings, type)
                and issubclass(self.client_settings, ClientSettings)
            ):
                raise ConfigurationError("GraphConfig.client_settings must subclass ClientSettings")
            self.client_settings.check_definition()
        if self.output_schema is not None:
            check_output_schema(self.output_schema, self.features)
        if isinstance(self.graph, Pregel):
            check_compiled_graph(self.graph, self.features)
        elif not callable(self.graph):
            raise ConfigurationError("GraphConfig.graph must be a compiled graph or a factory")

    def supports(self, feature: GraphFeature) -> bool:
        return feature in self.features

    @property
    def keeps_thread(self) -> bool:
        return GraphFeature.THREADS in self.features

    @property
    def checkpointed(self) -> bool:
        """Runs under a lease on a checkpoint thread (pausable, or keeping state)."""
        return bool({GraphFeature.INTERRUPTS, GraphFeature.THREADS} & self.features)

    async def resolve_graph(self) -> CompiledGraph:
        if isinstance(self.graph, Pregel):
            return self.graph
        built = self.graph()
        if inspect.isawaitable(built):
            built = await built
        if not isinstance(built, Pregel):
            raise GraphError(f"graph factory returned {type(built).__name__}, not a compiled graph")
        check_compiled_graph(built, self.features)
        return built


def check_compiled_graph(graph: CompiledGraph, features: frozenset[GraphFeature]) -> None:
    """Reject graphs whose persistence does not match their declared features."""
    wants_checkpointer = bool({GraphFeature.INTERRUPTS, GraphFeature.THREADS} & features)
    if graph.interrupt_before_nodes or graph.interrupt_after_nodes:
        raise ConfigurationError(
            "static breakpoints (interrupt_before/after) are not supported; call interrupt()"
        )
    checkpointer = graph.checkpointer
    if wants_checkpointer:
        if checkpointer is None or checkpointer is True or checkpointer is False:
            raise ConfigurationError(
                "a graph with GraphFeature.INTERRUPTS or THREADS must be compiled with a "
                "checkpointer (use resources.checkpointer)"
            )
    elif checkpointer not in (None, False):
        # An implicit checkpointer costs a write per step and keeps state nobody can resume.
        raise ConfigurationError(
            "only graphs declaring GraphFeature.INTERRUPTS or THREADS may be compiled with a "
            "checkpointer"
        )


@dataclass(slots=True)
class GraphRegistry:
    """The graphs a server exposes, keyed by model id."""

    graphs: dict[str, GraphConfig]
    run_coordinator: RunCoordinator | None = None
    _sorted_ids: tuple[str, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        if not self.graphs:
            raise ConfigurationError("GraphRegistry needs at least one graph")
        for model, config in self.graphs.items():
            problem = model_id_problem(model)
            if problem:
                raise ConfigurationError(f"model id {model!r}: {problem}")
            if not isinstance(config, GraphConfig):
                raise ConfigurationError(f"model {model!r}: expected a GraphConfig")
            if config.checkpointed and self.run_coordinator is None:
                raise ConfigurationError(
                    f"model {model!r} declares interrupts or threads, so the registry needs a "
                    "run_coordinator (use resources.run_coordinator)"
                )
        self._sorted_ids = tuple(sorted(self.graphs))

    @property
    def model_ids(self) -> tuple[str, ...]:
        return self._sorted_ids

    def get(self, model: str) -> GraphConfig:
        try:
            return self.graphs[model]
        except KeyError:
            raise ModelNotFoundError(model) from None


def model_id_problem(model: str) -> str | None:
    if not isinstance(model, str) or not model.strip():
        return "must be a non-empty string"
    if "/" in model:
        return "must not contain '/'"
    if model in {".", ".."}:
        return "must not be '.' or '..'"
    if model != model.strip():
        return "must not start or end with whitespace"
    return None
