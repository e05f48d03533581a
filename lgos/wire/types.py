"""The shapes of what LGOS sends: the Response object, its output items and usage, every
Responses stream event, and Chat Completions objects and chunks.

`TypedDict`s: the type checker holds the encoders to these shapes, and at run time they are
the plain dicts the JSON renderer and the event logs take, with no validation or copy per event
on the streaming path.
"""

from __future__ import annotations

from typing import Any, Literal, Required, TypedDict

from lgos.core.background import ResponseStatus

__all__ = [
    "ChatChunk",
    "ChatCompletion",
    "ConversationRef",
    "FunctionCallItem",
    "MessageItem",
    "OutputItem",
    "OutputText",
    "ResponseError",
    "ResponseObject",
    "ResponseStatus",
    "ResponseUsage",
    "StreamEvent",
    "UrlCitation",
]


class UrlCitation(TypedDict):
    type: Literal["url_citation"]
    url: str
    title: str
    start_index: int
    end_index: int


class OutputText(TypedDict):
    type: Literal["output_text"]
    text: str
    annotations: list[UrlCitation]
    logprobs: list[Any]  # always empty: no graph reports log probabilities


ItemStatus = Literal["in_progress", "completed", "incomplete"]


class MessageItem(TypedDict):
    type: Literal["message"]
    id: str
    role: Literal["assistant"]
    status: ItemStatus
    phase: str
    content: list[OutputText]


class FunctionCallItem(TypedDict):
    type: Literal["function_call"]
    id: str
    call_id: str
    name: str
    arguments: str
    status: ItemStatus


OutputItem = MessageItem | FunctionCallItem


class InputTokensDetails(TypedDict):
    cached_tokens: int
    cache_write_tokens: int


class OutputTokensDetails(TypedDict):
    reasoning_tokens: int


class ResponseUsage(TypedDict):
    input_tokens: int
    input_tokens_details: InputTokensDetails
    output_tokens: int
    output_tokens_details: OutputTokensDetails
    total_tokens: int


class ResponseError(TypedDict):
    code: str
    message: str


class ConversationRef(TypedDict):
    id: str


class TextFormat(TypedDict):
    format: dict[str, str]  # {"type": "text"}: LGOS answers in text


class ResponseObject(TypedDict):
    """The Response with the full Open Responses field set (nulls where empty)."""

    id: str
    object: Literal["response"]
    created_at: int
    completed_at: int | None
    status: ResponseStatus
    background: bool
    store: bool
    model: str
    previous_response_id: str | None
    instructions: str | None
    output: list[OutputItem]
    error: ResponseError | None
    incomplete_details: None
    usage: ResponseUsage | None
    metadata: dict[str, str]
    # The request's tools and tool choice, echoed as the decoder accepted them (any tool type).
    tools: list[dict[str, Any]]
    tool_choice: Any
    parallel_tool_calls: bool
    temperature: float
    top_p: float
    presence_penalty: float
    frequency_penalty: float
    top_logprobs: int
    max_output_tokens: int | None
    max_tool_calls: int | None
    truncation: Literal["disabled"]
    text: TextFormat
    reasoning: None
    user: str | None
    service_tier: Literal["default"]
    safety_identifier: str | None
    prompt_cache_key: str | None
    conversation: ConversationRef | None


class StreamError(TypedDict):
    type: str
    code: str
    message: str
    param: None


class StreamEvent(TypedDict, total=False):
    """Any Responses stream event: `type` says which, and which of the other keys it has
    (`response.*` lifecycle events carry `response`; item events `output_index` and `item`;
    part and text events `item_id`, `content_index` and their payload; `error` its fields)."""

    type: Required[str]
    sequence_number: Required[int]
    response: ResponseObject
    output_index: int
    item: OutputItem
    item_id: str
    content_index: int
    part: OutputText
    delta: str
    text: str
    logprobs: list[Any]
    annotation_index: int
    annotation: UrlCitation
    name: str
    arguments: str
    code: str
    message: str
    param: None
    error: StreamError


class ChatCompletion(TypedDict):
    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    system_fingerprint: str
    service_tier: Literal["default"]
    # The choice, message and usage objects as OpenAI defines them (see chat_encoder).
    choices: list[dict[str, Any]]
    usage: dict[str, Any]


class ChatChunk(TypedDict, total=False):
    """A `chat.completion.chunk`, or the error object a failing stream ends with."""

    id: str
    object: Literal["chat.completion.chunk"]
    created: int
    model: str
    system_fingerprint: str
    service_tier: Literal["default"]
    choices: list[dict[str, Any]]
    usage: dict[str, Any] | None
    error: dict[str, Any]
