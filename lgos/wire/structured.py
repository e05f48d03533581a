"""Structured output requests: Responses `text.format` and Chat `response_format`.

Both become one `ResponseFormat`. The schema must be JSON Schema (400 otherwise, naming the
field); whether the graph honours it is checked later against its registration (`Demand`).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field, ValidationError

from lgos.core.capabilities import Demand
from lgos.core.errors import InvalidRequestError
from lgos.core.json_schema import JsonSchema
from lgos.core.registry import GraphFeature
from lgos.core.request import Reasoning, ResponseFormat
from lgos.core.structured_output import check_schema
from lgos.wire.decoding import StrictBody, from_validation_error

_NAME = Field(min_length=1, max_length=64, pattern=r"^[a-zA-Z0-9_-]+$")


class _TextFormat(StrictBody):
    type: Literal["text"]


class _JsonObjectFormat(StrictBody):
    type: Literal["json_object"]


class _ResponsesSchemaFormat(StrictBody):
    """Responses `text.format`: the schema's fields sit beside `type`."""

    type: Literal["json_schema"]
    name: str = _NAME
    schema_: JsonSchema = Field(alias="schema")
    strict: bool | None = None
    description: str | None = None


class _ChatSchema(StrictBody):
    name: str = _NAME
    schema_: JsonSchema | None = Field(default=None, alias="schema")
    strict: bool | None = None
    description: str | None = None


class _ChatSchemaFormat(StrictBody):
    """Chat `response_format`: the schema's fields are nested under `json_schema`."""

    type: Literal["json_schema"]
    json_schema: _ChatSchema


def _validated(model: type[BaseModel], data: Any, param: str) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise from_validation_error(error, frozenset(), prefix=param) from None


def _kind(data: Any, param: str) -> str:
    kind = data.get("type") if isinstance(data, dict) else None
    if kind not in ("text", "json_object", "json_schema"):
        raise InvalidRequestError(
            f"Invalid '{param}.type': expected 'text', 'json_object' or 'json_schema'.",
            param=f"{param}.type",
            code="invalid_value",
        )
    return str(kind)


def _schema_checked(schema: JsonSchema | None, param: str) -> JsonSchema | None:
    problem = None if schema is None else check_schema(schema)
    if problem is not None:
        raise InvalidRequestError(
            f"Invalid '{param}': {problem}.", param=param, code="invalid_value"
        )
    return schema


def responses_format(data: Any, param: str = "text.format") -> ResponseFormat | None:
    """The Responses `text.format` object; None for plain text."""
    if data is None:
        return None
    kind = _kind(data, param)
    if kind == "text":
        _validated(_TextFormat, data, param)
        return None
    if kind == "json_object":
        _validated(_JsonObjectFormat, data, param)
        return ResponseFormat("json_object")
    parsed: _ResponsesSchemaFormat = _validated(_ResponsesSchemaFormat, data, param)
    return ResponseFormat(
        "json_schema",
        name=parsed.name,
        schema=_schema_checked(parsed.schema_, f"{param}.schema"),
        strict=bool(parsed.strict),
        description=parsed.description,
    )


def chat_format(data: Any, param: str = "response_format") -> ResponseFormat | None:
    """The Chat `response_format` object; None for plain text."""
    if data is None:
        return None
    kind = _kind(data, param)
    if kind == "text":
        _validated(_TextFormat, data, param)
        return None
    if kind == "json_object":
        _validated(_JsonObjectFormat, data, param)
        return ResponseFormat("json_object")
    parsed: _ChatSchemaFormat = _validated(_ChatSchemaFormat, data, param)
    spec = parsed.json_schema
    return ResponseFormat(
        "json_schema",
        name=spec.name,
        schema=_schema_checked(spec.schema_, f"{param}.json_schema.schema"),
        strict=bool(spec.strict),
        description=spec.description,
    )


class _ReasoningOptions(StrictBody):
    effort: Literal["none", "minimal", "low", "medium", "high", "xhigh"] | None = None
    summary: Literal["auto", "concise", "detailed"] | None = None
    generate_summary: Literal["auto", "concise", "detailed"] | None = None  # deprecated name


def reasoning_options(data: Any, effort: Any = None) -> tuple[Reasoning | None, tuple[Demand, ...]]:
    """The `reasoning` object (`data`; Responses, and Chat for clients that send it there),
    Chat's `reasoning_effort` (`effort`), or both when they agree."""
    if data is None and effort is None:
        return None, ()
    parsed = _ReasoningOptions()
    if data is not None:
        parsed = _validated(_ReasoningOptions, data, "reasoning")
    if effort is not None:
        allowed = ("none", "minimal", "low", "medium", "high", "xhigh")
        if effort not in allowed:
            raise InvalidRequestError(
                f"Invalid 'reasoning_effort': expected one of {', '.join(allowed)}.",
                param="reasoning_effort",
                code="invalid_value",
            )
        if parsed.effort not in (None, effort):
            raise InvalidRequestError(
                "Invalid 'reasoning.effort': it differs from 'reasoning_effort'; send one.",
                param="reasoning.effort",
                code="invalid_value",
            )
    options = Reasoning(effort or parsed.effort, parsed.summary or parsed.generate_summary)
    param = "reasoning" if data is not None else "reasoning_effort"
    return options, (Demand(GraphFeature.REASONING, param, "reasoning options"),)


def format_demand(response_format: ResponseFormat | None, param: str) -> tuple[Demand, ...]:
    if response_format is None:
        return ()
    what = "a JSON schema answer" if response_format.type == "json_schema" else "a JSON answer"
    return (Demand(GraphFeature.STRUCTURED_OUTPUT, param, what),)
