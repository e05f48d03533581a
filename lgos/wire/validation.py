"""Shared request validation: JSON bodies, Pydantic errors as OpenAI 400s, metadata limits."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, ValidationError

from lgos import safe_json
from lgos.errors import InvalidRequestError

Model = TypeVar("Model", bound=BaseModel)


class StrictBody(BaseModel):
    """Base of request bodies: unknown fields are refused, and types are not coerced ("yes" is
    not a boolean and "2" is not a number in an API request)."""

    model_config = ConfigDict(extra="forbid", strict=True)


# Names pydantic puts into error locations for union members; they are not request fields.
_UNION_LABELS = {
    "str",
    "int",
    "float",
    "bool",
    "list",
    "dict",
    "none",
    "function-after",
    "literal",
}


def parse_json_object(body: bytes) -> dict[str, Any]:
    if not body:
        raise InvalidRequestError(
            "The request body is empty; send a JSON object.", code="invalid_json"
        )
    try:
        value = safe_json.loads(body)
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise InvalidRequestError(
            "We could not parse the JSON body of your request. The OpenAI API expects a JSON "
            "payload.",
            code="invalid_json",
        ) from None
    except safe_json.JSONLimitError as error:
        raise json_limit_error(error) from None
    if not isinstance(value, dict):
        raise InvalidRequestError("The request body must be a JSON object.", code="invalid_type")
    return value


def json_limit_error(
    error: safe_json.JSONLimitError, param: str | None = None
) -> InvalidRequestError:
    """A 400 for JSON past a limit: in the body (`param` None: the path names the field) or
    inside a JSON string the request carries (`param` names that string)."""
    if param is None:
        param = param_path(error.path) or None
        where = f"'{param}'" if param else "the request body"
    else:
        where = f"'{param}'"
    return InvalidRequestError(
        f"Invalid {where}: {error.problem} is not accepted.", param=param, code="invalid_value"
    )


def param_path(location: tuple[int | str, ...]) -> str:
    path = ""
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        elif _is_union_label(part):
            continue
        else:
            path += f".{part}" if path else part
    return path


def _is_union_label(part: str) -> bool:
    return (
        part in _UNION_LABELS
        or "[" in part
        or part.startswith(("tagged-", "union["))
        or part.endswith(("-item", "-tag"))
    )


def validate(
    model: type[Model], data: Mapping[str, Any], tags: frozenset[str] = frozenset()
) -> Model:
    """Validate `data`, turning the first error into a 400 that names the field."""
    try:
        return model.model_validate(data)
    except ValidationError as error:
        raise from_validation_error(error, tags) from None


def from_validation_error(error: ValidationError, tags: frozenset[str]) -> InvalidRequestError:
    first = _most_specific(error.errors())
    location = _without_tags(tuple(first["loc"]), tags)
    param = param_path(location) or None
    kind = first["type"]
    if kind == "extra_forbidden":
        return InvalidRequestError(
            f"Unknown parameter: '{param}'.", param=param, code="unknown_parameter"
        )
    if kind == "missing":
        return InvalidRequestError(
            f"Missing required parameter: '{param}'.",
            param=param,
            code="missing_required_parameter",
        )
    message = first["msg"]
    if message.startswith("Value error, "):
        message = message.removeprefix("Value error, ")
    code = "invalid_type" if kind.endswith("_type") else "invalid_value"
    return InvalidRequestError(f"Invalid '{param}': {message}", param=param, code=code)


def _without_tags(location: tuple[int | str, ...], tags: frozenset[str]) -> tuple[int | str, ...]:
    """Drop the discriminator labels pydantic adds after a list index (`messages[0].user`);
    a field that happens to share a label's name (`user` of the body) stays."""
    kept: list[int | str] = []
    for index, part in enumerate(location):
        if part in tags and index > 0 and isinstance(location[index - 1], int):
            continue
        kept.append(part)
    return tuple(kept)


def _most_specific(errors: list[Any]) -> Any:
    """Prefer the error that reaches deepest into the request: it names the real culprit."""
    return max(errors, key=lambda item: len(item["loc"]))


def check_metadata(metadata: Mapping[str, Any] | None) -> dict[str, str]:
    """OpenAI's metadata limits: 16 pairs, keys up to 64 chars, string values up to 512."""
    if metadata is None:
        return {}
    if not isinstance(metadata, Mapping):
        raise InvalidRequestError(
            "Invalid 'metadata': expected an object.", param="metadata", code="invalid_type"
        )
    if len(metadata) > 16:
        raise InvalidRequestError(
            "Invalid 'metadata': too many properties. Expected an object with at most 16 "
            f"properties, but got an object with {len(metadata)} properties instead.",
            param="metadata",
            code="object_above_max_properties",
        )
    for key, value in metadata.items():
        if len(key) > 64:
            raise InvalidRequestError(
                f"Invalid 'metadata': property name '{key[:64]}...' is longer than 64 characters.",
                param="metadata",
                code="property_name_above_max_length",
            )
        if not isinstance(value, str):
            raise InvalidRequestError(
                f"Invalid 'metadata.{key}': expected a string.",
                param=f"metadata.{key}",
                code="invalid_type",
            )
        if len(value) > 512:
            raise InvalidRequestError(
                f"Invalid 'metadata.{key}': string too long. Expected a string with maximum "
                f"length 512, but got a string with length {len(value)} instead.",
                param=f"metadata.{key}",
                code="string_above_max_length",
            )
        if key.startswith("lgos_") and key != "lgos_settings":
            raise InvalidRequestError(
                f"Invalid 'metadata.{key}': keys starting with 'lgos_' are reserved.",
                param=f"metadata.{key}",
                code="invalid_value",
            )
    return dict(metadata)


def unsupported(param: str, detail: str = "") -> InvalidRequestError:
    suffix = f" {detail}" if detail else ""
    return InvalidRequestError(
        f"Unsupported parameter: '{param}' is not supported by this server.{suffix}",
        param=param,
        code="unsupported_parameter",
    )


def unsupported_content(param: str, part_type: str) -> InvalidRequestError:
    """A message content part other than text (images, audio, files)."""
    return InvalidRequestError(
        f"Invalid '{param}.type': '{part_type}' content is not supported; send text.",
        param=f"{param}.type",
        code="unsupported_value",
    )
