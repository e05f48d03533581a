"""Chat Completions objects and chunks (`openai.types.chat`)."""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from lgos.wire.error_envelope import ErrorEnvelope

FinishReason = Literal["stop", "tool_calls"]


class UrlCitationDetail(TypedDict):
    url: str
    title: str
    start_index: int
    end_index: int


class UrlCitationAnnotation(TypedDict):
    type: Literal["url_citation"]
    url_citation: UrlCitationDetail


class FunctionCall(TypedDict):
    name: str
    arguments: str


class ToolCall(TypedDict):
    """A call of a client's function tool, or a paused run's question (`lgos_interrupt`)."""

    id: str
    type: Literal["function"]
    function: FunctionCall


class ToolCallDelta(TypedDict):
    """A whole tool call in one chunk, with its place in the message's calls."""

    index: int
    id: str
    type: Literal["function"]
    function: FunctionCall


class PromptTokensDetails(TypedDict):
    cached_tokens: int
    audio_tokens: int


class CompletionTokensDetails(TypedDict):
    reasoning_tokens: int
    audio_tokens: int
    accepted_prediction_tokens: int
    rejected_prediction_tokens: int


class CompletionUsage(TypedDict):
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: PromptTokensDetails
    completion_tokens_details: CompletionTokensDetails


class CompletionMessage(TypedDict):
    role: Literal["assistant"]
    content: str | None
    refusal: None
    annotations: list[UrlCitationAnnotation]
    tool_calls: NotRequired[list[ToolCall]]


class Choice(TypedDict):
    index: int
    message: CompletionMessage
    logprobs: None
    finish_reason: FinishReason


class ChatCompletion(TypedDict):
    id: str
    object: Literal["chat.completion"]
    created: int
    model: str
    system_fingerprint: str
    service_tier: Literal["default"]
    choices: list[Choice]
    usage: CompletionUsage


class ChoiceDelta(TypedDict, total=False):
    """What one chunk adds to the message: its role and first (empty) content, more text,
    or the tool calls; the last chunk of a choice adds nothing."""

    role: Literal["assistant"]
    content: str
    tool_calls: list[ToolCallDelta]


class ChunkChoice(TypedDict):
    index: int
    delta: ChoiceDelta
    logprobs: None
    finish_reason: FinishReason | None


class ChunkPrefix(TypedDict):
    """What every chunk of one completion starts with."""

    id: str
    object: Literal["chat.completion.chunk"]
    created: int
    model: str
    system_fingerprint: str
    service_tier: Literal["default"]


class ChatChunk(ChunkPrefix):
    choices: list[ChunkChoice]


class UsageChunk(ChatChunk):
    """A chunk of a stream with `stream_options.include_usage`: `usage` is null on every
    chunk but the last, which has no choices and the usage."""

    usage: CompletionUsage | None


# What a Chat Completions stream sends: chunks, and the error envelope a failing one ends with.
ChatStreamItem = ChatChunk | ErrorEnvelope
