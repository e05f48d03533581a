"""Checking a graph's final answer against the shape the client asked for.

OpenAI guarantees a `strict` JSON schema answer; LGOS cannot make a graph's model obey, but it
can refuse to hand the client an answer that breaks the promise: the run fails with a message
that says which rule the answer broke, instead of the client's parser failing later.
"""

from __future__ import annotations

import json
from typing import Any

import jsonschema

from lgos.core.errors import LgosError
from lgos.core.request import ResponseFormat


class AnswerFormatError(LgosError):
    """The graph's answer does not have the shape the request asked for.

    The graph (or its model) is at fault, not the client: a 5xx-class failure whose message is
    safe to show, since it only describes the answer against the client's own schema.
    """

    status_code = 502
    error_type = "server_error"

    def __init__(self, message: str) -> None:
        super().__init__(message, code="server_error")


def check_answer(text: str, response_format: ResponseFormat | None) -> None:
    """Raise `AnswerFormatError` when `text` is not what `response_format` promises.

    `json_object` and every `json_schema` answer must be a JSON object; a `strict` schema
    answer must also validate against the schema.
    """
    if response_format is None:
        return
    label = f"'{response_format.name}'" if response_format.name else "the requested"
    try:
        value: Any = json.loads(text)
    except json.JSONDecodeError as error:
        raise AnswerFormatError(
            f"The graph's answer is not JSON, though {label} format asks for a JSON object "
            f"({error.msg} at character {error.pos})."
        ) from None
    if not isinstance(value, dict):
        raise AnswerFormatError(
            f"The graph's answer is JSON but not an object, though {label} format asks for one."
        )
    if not (response_format.strict and response_format.schema is not None):
        return
    validator_class = jsonschema.validators.validator_for(response_format.schema)
    validator = validator_class(dict(response_format.schema))
    problem = jsonschema.exceptions.best_match(validator.iter_errors(value))
    if problem is not None:
        where = "/".join(str(part) for part in problem.absolute_path) or "(the root)"
        raise AnswerFormatError(
            f"The graph's answer breaks the strict JSON schema {label}: at {where}, "
            f"{problem.message}."
        )


def check_schema(schema: Any) -> str | None:
    """Why `schema` is not a JSON Schema, or None when it is one."""
    if not isinstance(schema, dict):
        return "expected a JSON Schema object"
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.exceptions.SchemaError as error:
        where = "/".join(str(part) for part in error.absolute_path)
        return f"not a valid JSON Schema ({error.message}{f' at {where}' if where else ''})"
    return None
