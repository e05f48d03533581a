"""`tool_choice` forms beyond a mode or one named function, shared by both APIs:
`allowed_tools` (a subset of the functions, with a mode) and a hosted tool type."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal

from pydantic import BaseModel, ValidationError

from lgos.core.errors import InvalidRequestError
from lgos.core.request import AllowedTools, ClientFunctionTool, HostedToolChoice
from lgos.wire.decoding import StrictBody, from_validation_error


class ToolRef(BaseModel):
    """One entry of `allowed_tools.tools`: a function by name, or a hosted tool by type."""

    model_config = {"extra": "allow"}
    type: str
    name: str | None = None
    function: dict[str, Any] | None = None  # untrusted client JSON: only its `name` is read


class AllowedToolsSpec(StrictBody):
    mode: Literal["auto", "required"]
    tools: list[ToolRef]


class ResponsesAllowedTools(AllowedToolsSpec):
    type: Literal["allowed_tools"]


class ChatAllowedTools(StrictBody):
    type: Literal["allowed_tools"]
    allowed_tools: AllowedToolsSpec


def validated(model: type[BaseModel], data: Any, param: str) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise from_validation_error(error, frozenset(), prefix=param) from None


def allowed_tools(
    spec: AllowedToolsSpec,
    tools: Sequence[ClientFunctionTool],
    hosted_types: Sequence[str],
    *,
    param: str,
) -> AllowedTools:
    """The functions `spec` allows; each must be in `tools` (hosted types in the request)."""
    if not spec.tools:
        raise InvalidRequestError(
            f"Invalid '{param}.tools': list at least one tool.",
            param=f"{param}.tools",
            code="invalid_value",
        )
    function_names = {tool.name for tool in tools}
    names: list[str] = []
    for index, ref in enumerate(spec.tools):
        where = f"{param}.tools[{index}]"
        if ref.type == "function":
            name = ref.name or (ref.function or {}).get("name")
            if name not in function_names:
                raise InvalidRequestError(
                    f"Invalid '{where}': no function named '{name}' in 'tools'.",
                    param=where,
                    code="invalid_value",
                )
            names.append(str(name))
        elif ref.type not in hosted_types:
            raise InvalidRequestError(
                f"Invalid '{where}.type': no '{ref.type}' tool in 'tools'.",
                param=f"{where}.type",
                code="invalid_value",
            )
    return AllowedTools(spec.mode, tuple(names))


def hosted_choice(kind: str, hosted_types: Sequence[str], *, param: str) -> HostedToolChoice:
    if kind not in hosted_types:
        raise InvalidRequestError(
            f"Invalid '{param}.type': no '{kind}' tool in 'tools' to choose.",
            param=f"{param}.type",
            code="invalid_value",
        )
    return HostedToolChoice(kind)
