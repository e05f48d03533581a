"""The items the store keeps and lists, a Response's input items and a Conversation's items
(`openai.types.responses.ResponseItem`, `openai.types.conversations.ConversationItem`), and the
Conversation object (`openai.types.conversations.Conversation`).

A stored item is valid Responses input as it is: a conversation's history is decoded again by
the request decoder when the conversation continues.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal, NotRequired, TypedDict, cast

from pydantic import JsonValue

from lgos.wire.types.responses import FunctionCallItem, MessagePhase, OutputItem


class InputTextPart(TypedDict):
    type: Literal["input_text"]
    text: str


class StoredOutputText(TypedDict):
    """An assistant message's text part as the client sent it back."""

    type: Literal["output_text"]
    text: str
    annotations: list[dict[str, JsonValue]]  # annotations of any kind, kept as the client sent them


class RefusalPart(TypedDict):
    type: Literal["refusal"]
    refusal: str


class StoredMessage(TypedDict):
    """A message of the client's input (an assistant's among them, sent back as history)."""

    type: Literal["message"]
    id: str
    role: Literal["user", "assistant", "system", "developer"]
    status: Literal["completed"]
    content: list[InputTextPart | StoredOutputText | RefusalPart]
    phase: NotRequired[MessagePhase]


class FunctionCallOutputItem(TypedDict):
    type: Literal["function_call_output"]
    id: str
    call_id: str
    output: str | list[InputTextPart]
    status: Literal["completed"]


# Input items as the store keeps them, and a Response's output items as they are.
StoredItem = StoredMessage | FunctionCallItem | FunctionCallOutputItem | OutputItem


class ItemList(TypedDict):
    """OpenAI's list object. `first_id`/`last_id` are required strings: empty when empty."""

    object: Literal["list"]
    data: list[StoredItem]
    first_id: str
    last_id: str
    has_more: bool


class Conversation(TypedDict):
    id: str
    object: Literal["conversation"]
    created_at: int
    metadata: dict[str, str]


class DeletedConversation(TypedDict):
    id: str
    object: Literal["conversation.deleted"]
    deleted: Literal[True]


def as_items(stored: Sequence[Mapping[str, Any]]) -> list[StoredItem]:
    """Items read back from a store: ones `lgos.wire.items` built (or a Response's output),
    stored as JSON and not validated again on the way out."""
    return cast("list[StoredItem]", list(stored))


def as_item(stored: Mapping[str, Any]) -> StoredItem:
    """One item read back from a store (see `as_items`)."""
    return cast(StoredItem, stored)
