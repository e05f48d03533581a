"""A registry graph as an MCP tool: its listing entry, and its arguments decoded and checked.

The tool takes the graph's input as one message (`input`; without it the graph runs on an
empty conversation, as a graph that needs no prompt does) and, when the graph has client
settings, the same settings object the model listing describes (`settings`). A graph that
pauses for review also takes `review_id` and `answer`, so a client that cannot show forms
answers a waiting review with a second call.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

import jsonschema
from langchain_core.messages import HumanMessage
from pydantic import JsonValue

from lgos.core.errors import InvalidRequestError
from lgos.core.json_schema import JsonSchema
from lgos.core.registry import GraphConfig, GraphFeature
from lgos.core.request import GraphRequest, ResponseFormat

INPUT = "input"
SETTINGS = "settings"
REVIEW_ID = "review_id"
ANSWER = "answer"
# Bigger arguments are refused before anything runs (the OpenAI routes' body limit applies to
# the HTTP body as well).
MAX_INPUT_CHARS = 1_000_000


def input_schema(config: GraphConfig) -> JsonSchema:
    """The tool's JSON Schema; `$defs` of the settings schema move to the root, where their
    `$ref`s point."""
    properties: dict[str, JsonSchema] = {
        INPUT: {
            "type": "string",
            "description": "Your message to the graph (the user's turn).",
            "maxLength": MAX_INPUT_CHARS,
        }
    }
    schema: JsonSchema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": properties,
    }
    if config.client_settings is not None:
        settings = dict(config.client_settings.json_schema())
        settings.pop("$schema", None)
        definitions = settings.pop("$defs", None)
        if definitions:
            schema["$defs"] = definitions
        settings["description"] = "Settings for this run; omitted ones keep their defaults."
        properties[SETTINGS] = settings
    if config.supports(GraphFeature.INTERRUPTS):
        properties[REVIEW_ID] = {
            "type": "string",
            "description": "To answer a waiting review instead: the review id the tool gave.",
        }
        properties[ANSWER] = {
            "type": "string",
            "description": "The answer to the review named by review_id.",
            "maxLength": MAX_INPUT_CHARS,
        }
    schema["additionalProperties"] = False
    return schema


@dataclass(frozen=True, slots=True)
class ToolArguments:
    """A call's arguments, checked: a new run's message, or an answer to a waiting review."""

    request: GraphRequest
    review_id: str | None = None
    answer: str | None = None


def decode_arguments(
    model: str,
    config: GraphConfig,
    arguments: dict[str, Any] | None,  # tool-call arguments
) -> ToolArguments:
    """Check `arguments` against the tool's schema; a problem is an InvalidRequestError whose
    message names the argument."""
    values = arguments or {}
    try:
        jsonschema.validate(values, input_schema(config))
    except jsonschema.ValidationError as error:
        where = ".".join(str(part) for part in error.absolute_path)
        raise InvalidRequestError(
            f"Invalid arguments{f' at {where!r}' if where else ''}: {_short(error.message)}"
        ) from None
    review_id, answer = values.get(REVIEW_ID), values.get(ANSWER)
    if (review_id is None) != (answer is None):
        raise InvalidRequestError(f"Pass '{REVIEW_ID}' and '{ANSWER}' together.")
    settings = None
    if config.client_settings is not None:
        raw = values.get(SETTINGS)
        settings = config.client_settings.from_metadata(None if raw is None else json.dumps(raw))
    text = values.get(INPUT)
    request = GraphRequest(
        model=model,
        messages=(HumanMessage(content=text),) if text is not None else (),
        settings=settings,
        response_format=answer_format(model, config),
    )
    return ToolArguments(request, review_id, answer)


def output_schema(config: GraphConfig) -> JsonSchema | None:
    """The tool's `outputSchema`: the graph's declared answer shape. Not for a graph that
    pauses: its review-waiting result has a shape of its own."""
    if config.output_schema is None or config.supports(GraphFeature.INTERRUPTS):
        return None
    return dict(config.output_schema)


def answer_format(model: str, config: GraphConfig) -> ResponseFormat | None:
    """The shape every call asks the graph for: its declared one, checked strictly (an answer
    that does not match fails the run instead of reaching the client)."""
    if config.output_schema is None:
        return None
    return ResponseFormat(
        type="json_schema", name=_schema_name(model), schema=config.output_schema, strict=True
    )


def structured_content(config: GraphConfig, text: str) -> dict[str, JsonValue] | None:
    """The answer as the object the declared schema describes (the run checked it)."""
    if config.output_schema is None:
        return None
    value = json.loads(text)
    return value if isinstance(value, dict) else None


def _schema_name(model: str) -> str:
    # OpenAI's rule for a schema name: letters, digits, underscores and dashes.
    return re.sub(r"[^A-Za-z0-9_-]", "_", model)[:64]


def _short(message: str, limit: int = 200) -> str:
    """jsonschema quotes the offending value; a huge one must not come back whole."""
    return message if len(message) <= limit else message[:limit] + "…"
