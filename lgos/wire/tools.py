"""Client function tools and `tool_choice`, checked the same way for both APIs."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Literal

from lgos.errors import InvalidRequestError
from lgos.run.request import ClientFunctionTool, NamedToolChoice, ToolChoice
from lgos.wire.responses import INTERRUPT_FUNCTION


def checked_tools(
    tools: Sequence[ClientFunctionTool], name_param: Callable[[int], str]
) -> tuple[ClientFunctionTool, ...]:
    """Refuse duplicated names and the name LGOS uses for its own questions."""
    seen: set[str] = set()
    for index, tool in enumerate(tools):
        if tool.name == INTERRUPT_FUNCTION or tool.name in seen:
            raise InvalidRequestError(
                f"Invalid '{name_param(index)}': '{tool.name}' is reserved or duplicated.",
                param=name_param(index),
                code="invalid_value",
            )
        seen.add(tool.name)
    return tuple(tools)


def resolve_tool_choice(
    mode: Literal["none", "auto", "required"] | None,
    named: str | None,
    tools: Sequence[ClientFunctionTool],
    *,
    name_param: str,
) -> ToolChoice:
    """`mode` or a named function (`named`); both absent means "auto"."""
    if named is not None:
        if named not in {tool.name for tool in tools}:
            raise InvalidRequestError(
                f"Invalid '{name_param}': no function named '{named}' in 'tools'.",
                param=name_param,
                code="invalid_value",
            )
        return NamedToolChoice(named)
    if mode == "required" and not tools:
        raise InvalidRequestError(
            "Invalid 'tool_choice': 'required' needs at least one tool.",
            param="tool_choice",
            code="invalid_value",
        )
    return mode or "auto"
