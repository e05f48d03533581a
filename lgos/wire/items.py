"""Items as they are stored and listed: Responses input items and Conversation items.

Every stored item carries an `id` (the SDKs paginate with `after=<last id>`) and a status, and
is in the shape the SDK's `ResponseItem` / `ConversationItem` unions accept, so a listing is
the stored items as they are. The same dicts are valid Responses input, so stored history is
decoded again by the request decoder when a conversation continues.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from lgos.wire import ids
from lgos.wire.responses_decoder import (
    FunctionCallItem,
    FunctionCallOutputItem,
    MessageItem,
    OutputText,
    Refusal,
    ResponsesBody,
)
from lgos.wire.types.items import (
    InputTextPart,
    ItemList,
    RefusalPart,
    StoredItem,
    StoredMessage,
    StoredOutputText,
)

DEFAULT_LIMIT = 20
MAX_LIMIT = 100


def input_items(body: ResponsesBody) -> list[StoredItem]:
    """The request's input as stored items (reasoning items carry nothing and are dropped)."""
    if isinstance(body.input, str):
        return [user_text(body.input)]
    return stored_items(body.input)


def stored_items(decoded: Sequence[Any]) -> list[StoredItem]:
    """Decoded input items as stored items, each with an id."""
    stored: list[StoredItem] = []
    for item in decoded:
        if isinstance(item, MessageItem):
            stored.append(_message(item))
        elif isinstance(item, FunctionCallItem):
            stored.append(
                {
                    "type": "function_call",
                    "id": item.id or ids.function_call_item_id(),
                    "call_id": item.call_id,
                    "name": item.name,
                    "arguments": item.arguments,
                    "status": "completed",
                }
            )
        elif isinstance(item, FunctionCallOutputItem):
            output: str | list[InputTextPart] = (
                item.output
                if isinstance(item.output, str)
                else [{"type": part.type, "text": part.text} for part in item.output]
            )
            stored.append(
                {
                    "type": "function_call_output",
                    "id": item.id or ids.function_call_output_id(),
                    "call_id": item.call_id,
                    "output": output,
                    "status": "completed",
                }
            )
    return stored


def user_text(text: str) -> StoredMessage:
    return {
        "type": "message",
        "id": ids.message_id(),
        "role": "user",
        "status": "completed",
        "content": [{"type": "input_text", "text": text}],
    }


def _message(item: MessageItem) -> StoredMessage:
    assistant = item.role == "assistant"
    parts: list[InputTextPart | StoredOutputText | RefusalPart] = []
    content = item.content if isinstance(item.content, list) else [item.content]
    for part in content:
        if isinstance(part, Refusal):
            parts.append({"type": "refusal", "refusal": part.refusal})
            continue
        text = part if isinstance(part, str) else getattr(part, "text", "")
        if assistant:
            annotations = part.annotations if isinstance(part, OutputText) else None
            parts.append({"type": "output_text", "text": text, "annotations": annotations or []})
        else:
            parts.append({"type": "input_text", "text": text})
    stored: StoredMessage = {
        "type": "message",
        "id": item.id or ids.message_id(),
        "role": item.role,
        "status": "completed",
        "content": parts,
    }
    if assistant and item.phase is not None:
        stored["phase"] = item.phase
    return stored


def item_list(items: Sequence[StoredItem], has_more: bool) -> ItemList:
    """OpenAI's list object. `first_id`/`last_id` are required strings: empty when empty."""
    return {
        "object": "list",
        "data": list(items),
        "first_id": items[0]["id"] if items else "",
        "last_id": items[-1]["id"] if items else "",
        "has_more": has_more,
    }
