"""The protocol-neutral request a graph run is built from."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from langchain_core.messages import BaseMessage

from lgos.core.client_settings import ClientSettings


@dataclass(frozen=True, slots=True)
class ClientFunctionTool:
    """A function the client owns: the graph may ask for it, the client executes it."""

    name: str
    description: str | None = None
    parameters: Mapping[str, Any] | None = None
    strict: bool | None = None

    def as_openai_tool(self) -> dict[str, Any]:  # what LangChain's `bind_tools` takes
        """The Chat Completions tool shape, which LangChain's `bind_tools` accepts (a graph
        binds the client's tools to its model with it)."""
        function: dict[str, Any] = {"name": self.name}  # the tool's `function` object
        if self.description is not None:
            function["description"] = self.description
        function["parameters"] = dict(self.parameters or {"type": "object", "properties": {}})
        if self.strict is not None:
            function["strict"] = self.strict
        return {"type": "function", "function": function}


@dataclass(frozen=True, slots=True)
class NamedToolChoice:
    name: str


@dataclass(frozen=True, slots=True)
class AllowedTools:
    """`allowed_tools`: the model may use only these functions, as `mode` says."""

    mode: Literal["auto", "required"]
    names: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class HostedToolChoice:
    """The model must use this hosted tool type (`web_search`, ...), which the graph runs."""

    type: str


ToolChoice = Literal["none", "auto", "required"] | NamedToolChoice | AllowedTools | HostedToolChoice


@dataclass(frozen=True, slots=True)
class ResponseFormat:
    """The shape the client asked the answer to have (Responses `text.format`, Chat
    `response_format`): a JSON object, or one matching `schema`.

    With `strict`, LGOS checks the graph's final answer against `schema` and fails the run
    when it does not match; a graph honouring the format passes `schema` to its model (for
    example `model.with_structured_output(schema, strict=True)`).
    """

    type: Literal["json_schema", "json_object"]
    name: str | None = None
    schema: Mapping[str, Any] | None = None
    strict: bool = False
    description: str | None = None


@dataclass(frozen=True, slots=True)
class Reasoning:
    """Responses `reasoning` (`effort`, `summary`) or Chat `reasoning_effort`, for a graph whose
    model reasons. A summary is shown only when `summary` asks for one, as OpenAI does."""

    effort: str | None = None
    summary: str | None = None


@dataclass(frozen=True, slots=True)
class GraphRequest:
    """What both OpenAI APIs decode into. Graph adapters receive it."""

    model: str
    messages: tuple[BaseMessage, ...]
    metadata: Mapping[str, str] = field(default_factory=dict)
    user: str | None = None
    tools: tuple[ClientFunctionTool, ...] = ()
    tool_choice: ToolChoice = "auto"
    parallel_tool_calls: bool = True
    # Hosted tools (`web_search`, `mcp`, ...) as the client sent them; only for graphs that
    # declare they run that type (`GraphConfig.hosted_tools`).
    hosted_tools: tuple[Mapping[str, Any], ...] = ()
    settings: ClientSettings | None = None
    # None: plain text, as the client did not ask for a shape.
    response_format: ResponseFormat | None = None
    reasoning: Reasoning | None = None
    # Responses `truncation`: "auto" lets the graph drop the oldest history to fit its model's
    # context window (LGOS itself never truncates).
    truncation: Literal["disabled", "auto"] = "disabled"

    @property
    def conversation_id(self) -> str | None:
        return self.metadata.get("conversation_id")
