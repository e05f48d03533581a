"""The Conversations API's request bodies and objects."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import Field, JsonValue

from lgos.core.errors import InvalidRequestError
from lgos.core.stored import StoredConversation
from lgos.wire.decoding import StrictBody, check_metadata, unsupported_content, validate
from lgos.wire.responses_decoder import InputItem, MessageItem, UnsupportedItem, UnsupportedPart
from lgos.wire.types.items import Conversation, DeletedConversation

MAX_ITEMS_PER_REQUEST = 20
_TAGS = frozenset(
    {"message", "function_call", "function_call_output", "reasoning", "unsupported"}
    | {"input_text", "output_text", "refusal"}
)


class CreateBody(StrictBody):
    items: list[InputItem] | None = Field(default=None, max_length=MAX_ITEMS_PER_REQUEST)
    metadata: dict[str, JsonValue] | None = None  # `check_metadata` checks it


class UpdateBody(StrictBody):
    metadata: dict[str, JsonValue] | None  # `check_metadata` checks it


class ItemsBody(StrictBody):
    items: list[InputItem] = Field(min_length=1, max_length=MAX_ITEMS_PER_REQUEST)


def decode_create(data: Mapping[str, Any]) -> tuple[list[Any], dict[str, str]]:
    body = validate(CreateBody, data, _TAGS)
    return _supported(body.items or []), check_metadata(body.metadata)


def decode_update(data: Mapping[str, Any]) -> dict[str, str]:
    return check_metadata(validate(UpdateBody, data, _TAGS).metadata)


def decode_items(data: Mapping[str, Any]) -> list[Any]:
    return _supported(validate(ItemsBody, data, _TAGS).items)


def _supported(items: list[Any]) -> list[Any]:
    """Only items a graph can be sent: messages of text, function calls and outputs."""
    for index, item in enumerate(items):
        if isinstance(item, UnsupportedItem):
            raise InvalidRequestError(
                f"Invalid 'items[{index}].type': '{item.type}' items are not supported.",
                param=f"items[{index}].type",
                code="unsupported_value",
            )
        if isinstance(item, MessageItem) and isinstance(item.content, list):
            for part_index, part in enumerate(item.content):
                if isinstance(part, UnsupportedPart):
                    raise unsupported_content(f"items[{index}].content[{part_index}]", part.type)
    return items


def conversation_object(conversation: StoredConversation) -> Conversation:
    return {
        "id": conversation.id,
        "object": "conversation",
        "created_at": conversation.created_at,
        "metadata": dict(conversation.metadata),
    }


def deleted_object(conversation_id: str) -> DeletedConversation:
    return {"id": conversation_id, "object": "conversation.deleted", "deleted": True}
