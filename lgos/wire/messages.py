"""Turning replayed OpenAI conversation items into LangChain messages, shared by both APIs."""

from __future__ import annotations

import json
from typing import Any

from langchain_core.messages import AIMessage, ToolCall

from lgos import safe_json
from lgos.errors import InvalidRequestError
from lgos.wire.validation import json_limit_error


def parse_arguments(arguments: str, param: str) -> dict[str, Any]:
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


def assistant_with_calls(text: str, calls: list[ToolCall]) -> AIMessage:
    return AIMessage(content=text, tool_calls=calls)
