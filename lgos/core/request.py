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


@dataclass(frozen=True, slots=True)
class NamedToolChoice:
    name: str


ToolChoice = Literal["none", "auto", "required"] | NamedToolChoice


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
    settings: ClientSettings | None = None

    @property
    def conversation_id(self) -> str | None:
        return self.metadata.get("conversation_id")
