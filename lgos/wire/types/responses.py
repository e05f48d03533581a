"""The Response object, its output items, usage and error (`openai.types.responses`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypedDict, cast

from pydantic import JsonValue

from lgos.core.background import ResponseStatus
from lgos.core.json_schema import JsonSchema

ItemStatus = Literal["in_progress", "completed", "incomplete"]
# Which of a graph's messages an assistant message is: the answer, or what it said on the way.
MessagePhase = Literal["final_answer", "commentary"]


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


class MessageItem(TypedDict):
    """An assistant message: the answer (`final_answer`) or commentary on the way."""

    type: Literal["message"]
    id: str
    role: Literal["assistant"]
    status: ItemStatus
    phase: MessagePhase
    content: list[OutputText]


class FunctionCallItem(TypedDict):
    """A call of a client's function tool, or a paused run's question: the LGOS review
    (interrupt) item is a function call named `lgos_interrupt` (`wire.interrupts`)."""

    type: Literal["function_call"]
    id: str
    call_id: str
    name: str
    arguments: str
    status: ItemStatus


class SummaryText(TypedDict):
    type: Literal["summary_text"]
    text: str


class ReasoningItem(TypedDict):
    """A reasoning item; its summary is empty unless the request asked for one."""

    type: Literal["reasoning"]
    id: str
    summary: list[SummaryText]


OutputItem = MessageItem | FunctionCallItem | ReasoningItem


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


# The codes a Response's `error` may carry: OpenAI's closed set (the SDK's strict validation
# refuses any other), of which LGOS uses these two; a graph's own code goes in the `error`
# stream event, whose code is free.
ResponseErrorCode = Literal["server_error", "invalid_prompt"]


class ResponseError(TypedDict):
    code: ResponseErrorCode
    message: str


class ConversationRef(TypedDict):
    id: str


class PlainTextFormat(TypedDict):
    type: Literal["text"]


class JsonObjectFormat(TypedDict):
    type: Literal["json_object"]


class JsonSchemaFormat(TypedDict):
    type: Literal["json_schema"]
    name: str
    schema: JsonSchema  # the client's, echoed as it was checked
    strict: bool
    description: str | None


TextFormat = PlainTextFormat | JsonObjectFormat | JsonSchemaFormat


class TextConfig(TypedDict):
    format: TextFormat


class ReasoningConfig(TypedDict):
    effort: str | None
    summary: str | None


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
    tools: list[dict[str, JsonValue]]  # function tools and hosted tools, as the client sent them
    tool_choice: str | dict[str, JsonValue]  # a mode, or a choice object of any tool type
    parallel_tool_calls: bool
    temperature: float
    top_p: float
    presence_penalty: float
    frequency_penalty: float
    top_logprobs: int
    max_output_tokens: int | None
    max_tool_calls: int | None
    truncation: str
    text: TextConfig
    reasoning: ReasoningConfig | None
    user: str | None
    service_tier: Literal["default"]
    safety_identifier: str | None
    prompt_cache_key: str | None
    conversation: ConversationRef | None


class DeletedResponse(TypedDict):
    id: str
    object: Literal["response"]
    deleted: Literal[True]


def as_response(stored: Mapping[str, Any]) -> ResponseObject:
    """A Response read back from a store, an engine or an event log: one an encoder built,
    stored as JSON and not validated again on the way out."""
    return cast(ResponseObject, stored)
