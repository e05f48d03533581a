"""The decode rules both APIs share: JSON bodies, Pydantic errors as OpenAI 400s, metadata
limits, unsupported fields, replayed function calls, client tools and `tool_choice`."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Generic, Literal, TypeVar

from langchain_core.messages import AIMessage, BaseMessage, ToolCall, ToolMessage
from pydantic import BaseModel, ConfigDict, Field, JsonValue, ValidationError

from lgos.core import safe_json
from lgos.core.capabilities import Demand, HostedToolDemand
from lgos.core.client_settings import SETTINGS_KEY
from lgos.core.errors import InvalidRequestError
from lgos.core.records import per_request
from lgos.core.request import (
    ClientFunctionTool,
    NamedToolChoice,
    Reasoning,
    ResponseFormat,
    ToolChoice,
)
from lgos.wire.interrupts import INTERRUPT_FUNCTION

Model = TypeVar("Model", bound=BaseModel)


class StrictBody(BaseModel):
    """Base of request bodies: unknown fields are refused, and types are not coerced ("yes" is
    not a boolean and "2" is not a number in an API request)."""

    model_config = ConfigDict(extra="forbid", strict=True)


class ApiBody(StrictBody):
    """The fields both APIs' request bodies share."""

    model: str = Field(min_length=1)
    stream: bool | None = None
    metadata: dict[str, JsonValue] | None = None  # `check_metadata` checks it
    user: str | None = None
    parallel_tool_calls: bool | None = None
    store: bool | None = None
    service_tier: str | None = None
    # Generation controls belong to the graph: only "unset" is accepted (see `reject_set`).
    temperature: float | None = None
    top_p: float | None = None
    top_logprobs: int | None = None
    presence_penalty: float | None = None
    frequency_penalty: float | None = None
    prompt_cache_key: str | None = None
    safety_identifier: str | None = None


Body = TypeVar("Body", bound=ApiBody)


@per_request
class DecodedRequest(Generic[Body]):
    """What both APIs' decoders produce: the validated body and the graph's view of it."""

    body: Body
    messages: tuple[BaseMessage, ...]
    metadata: dict[str, str]
    tools: tuple[ClientFunctionTool, ...]
    tool_choice: ToolChoice
    # Answers to a paused run (outputs answering lgos_interrupt calls): call id → output.
    # None for an ordinary request.
    answers: dict[str, str] | None
    # The answer's requested shape, and the parts of the request only some graphs take.
    response_format: ResponseFormat | None = None
    reasoning: Reasoning | None = None
    demands: tuple[Demand | HostedToolDemand, ...] = ()
    # Hosted tools (non-function `tools` entries) as sent, for graphs that run them.
    hosted_tools: tuple[dict[str, Any], ...] = ()  # client JSON, read by the graphs that run them

    @property
    def stream(self) -> bool:
        return bool(self.body.stream)

    @property
    def truncation(self) -> Literal["disabled", "auto"]:
        return "disabled"  # what an API without the field means


# The shared fields a graph decides for itself; each API adds its own (`reject_set`).
GENERATION_CONTROLS = (
    "temperature",
    "top_p",
    "top_logprobs",
    "presence_penalty",
    "frequency_penalty",
    "prompt_cache_key",
    "safety_identifier",
)


IDEMPOTENCY_HEADERS = ("idempotency-key", "x-idempotency-key")
MAX_IDEMPOTENCY_KEY_LENGTH = 255


def idempotency_key(headers: Mapping[str, str], body_key: str | None = None) -> str | None:
    """The client's Idempotency-Key: a header (either spelling), else `body_key` (what LiteLLM
    forwards in a Responses body); None when the client sent none."""
    key = body_key
    for name in IDEMPOTENCY_HEADERS:
        if name in headers:
            key = headers[name]
            break
    if key is None:
        return None
    if not 1 <= len(key) <= MAX_IDEMPOTENCY_KEY_LENGTH:
        raise InvalidRequestError(
            "Invalid 'Idempotency-Key': expected 1 to 255 characters.",
            param="Idempotency-Key",
            code="invalid_value",
        )
    return key


def reject_set(body: ApiBody, names: Sequence[str]) -> None:
    """Refuse any of these fields unless unset: the graph decides how its models are called."""
    if body.model_fields_set.isdisjoint(names):  # the usual request: none of them was sent
        return
    for name in names:
        if getattr(body, name) is not None:
            raise unsupported(name, "The graph decides how its models are called.")


def check_common(body: ApiBody, stream_options: object) -> None:
    """The rules both APIs apply to the shared fields (after their own generation controls)."""
    if stream_options is not None and not body.stream:
        raise InvalidRequestError(
            "Invalid 'stream_options': only allowed when 'stream' is true.",
            param="stream_options",
            code="invalid_value",
        )
    if body.service_tier not in (None, "auto", "default"):
        raise unsupported("service_tier")


def joined_text(parts: Iterable[Any], param: str, text_of: Callable[[Any], str | None]) -> str:
    """The text of content parts; a part `text_of` has no text for is refused by index."""
    texts = []
    for index, part in enumerate(parts):
        text = text_of(part)
        if text is None:
            raise unsupported_content(f"{param}[{index}]", part.type)
        texts.append(text)
    return "".join(texts)


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


def parse_json_object(body: bytes) -> dict[str, Any]:  # untrusted: a decoder validates it
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
    if param is not None:
        return error.refusal(param)
    located = param_path(error.path) or None
    return error.refusal(located, None if located else "the request body")


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


def from_validation_error(
    error: ValidationError, tags: frozenset[str], *, prefix: str = ""
) -> InvalidRequestError:
    """`prefix` is where the validated value sits in the request, for parts checked alone."""
    first = _most_specific(error.errors())
    location = _without_tags(tuple(first["loc"]), tags)
    param = ".".join(part for part in (prefix, param_path(location)) if part) or None
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
        if key.startswith("lgos_") and key != SETTINGS_KEY:
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


def parse_arguments(arguments: str, param: str) -> dict[str, Any]:  # tool-call arguments
    try:
        value = safe_json.loads(arguments) if arguments else {}
    except safe_json.JSONLimitError as error:
        raise json_limit_error(error, param) from None
    except json.JSONDecodeError:
        raise InvalidRequestError(
            f"Invalid '{param}': function call arguments must be a JSON object string.",
            param=param,
            code="invalid_value",
        ) from None
    if not isinstance(value, dict):
        raise InvalidRequestError(
            f"Invalid '{param}': function call arguments must be a JSON object.",
            param=param,
            code="invalid_value",
        )
    return value


def tool_call(call_id: str, name: str, arguments: str, param: str) -> ToolCall:
    return ToolCall(id=call_id, name=name, args=parse_arguments(arguments, param), type="tool_call")


def tool_output(
    call_id: str,
    content: str,
    *,
    calls: Mapping[str, str],
    answered: set[str],
    param: str,
    problem: str,
) -> ToolMessage:
    """A replayed tool output; refused unless it answers an earlier call, and only once."""
    if call_id not in calls or call_id in answered:
        raise InvalidRequestError(
            f"Invalid '{param}': {problem}", param=param, code="invalid_value"
        )
    answered.add(call_id)
    return ToolMessage(content=content, tool_call_id=call_id)


def assistant_with_calls(content: str | list[Any], calls: list[ToolCall]) -> AIMessage:
    """The AI message that made `calls`; `content` is its text, or its content blocks (the
    reasoning before the calls)."""
    return AIMessage(content=content or "", tool_calls=calls)


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
