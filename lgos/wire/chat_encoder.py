"""Chat Completions responses: the completion object and its chunks (plain dicts typed by
`lgos.wire.types.chat`; the caller frames them as SSE `data:` lines)."""

from __future__ import annotations

import json
import time

from lgos.core.run_events import Citation, Finished, Interrupted, Usage
from lgos.wire import ids
from lgos.wire.error_envelope import SERVER_ERROR_MESSAGE, ErrorEnvelope, error_body
from lgos.wire.interrupts import INTERRUPT_FUNCTION, interrupt_arguments, interrupt_call_id
from lgos.wire.types.chat import (
    ChatChunk,
    ChatCompletion,
    ChoiceDelta,
    ChunkChoice,
    ChunkPrefix,
    CompletionMessage,
    CompletionUsage,
    FinishReason,
    ToolCall,
    UrlCitationAnnotation,
    UsageChunk,
)


def url_annotations(citations: tuple[Citation, ...]) -> list[UrlCitationAnnotation]:
    return [
        {
            "type": "url_citation",
            "url_citation": {
                "url": citation.url,
                "title": citation.title,
                "start_index": citation.start_index,
                "end_index": citation.end_index,
            },
        }
        for citation in citations
    ]


def usage_object(usage: Usage) -> CompletionUsage:
    """The usage object with the detail objects OpenAI sends (zeros where a model reports none)."""
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
        "prompt_tokens_details": {"cached_tokens": usage.cached_tokens, "audio_tokens": 0},
        "completion_tokens_details": {
            "reasoning_tokens": usage.reasoning_tokens,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def tool_calls(event: Finished | Interrupted) -> list[ToolCall]:
    if isinstance(event, Interrupted):
        return [
            {
                "id": interrupt_call_id(event.run_id, pending.id),
                "type": "function",
                "function": {"name": INTERRUPT_FUNCTION, "arguments": interrupt_arguments(pending)},
            }
            for pending in event.interrupts
        ]
    return [
        {
            "id": call.get("id") or ids.tool_call_id(),
            "type": "function",
            "function": {"name": call["name"], "arguments": json.dumps(call["args"])},
        }
        for call in event.message.tool_calls
    ]


def completion(model: str, event: Finished | Interrupted) -> ChatCompletion:
    """A completion that is not streamed: the whole answer in one object."""
    calls = tool_calls(event)
    text = event.text
    message: CompletionMessage = {
        "role": "assistant",
        "content": text if text or not calls else None,
        "refusal": None,
        "annotations": (url_annotations(event.citations) if isinstance(event, Finished) else []),
    }
    if calls:
        message["tool_calls"] = calls
    return {
        "id": ids.chat_completion_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": ids.system_fingerprint(),
        "service_tier": "default",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": "tool_calls" if calls else "stop",
            }
        ],
        "usage": usage_object(event.usage),
    }


class ChatEncoder:
    """One streamed completion's chunks; all share id, created and model. (A completion that
    is not streamed is `completion`'s: it makes no chunk prefix.)"""

    __slots__ = ("_include_usage", "_prefix")

    def __init__(self, model: str, *, include_usage: bool = False) -> None:
        self._include_usage = include_usage
        # Everything before the choices, serialized once per stream rather than per chunk.
        self._prefix: ChunkPrefix = {
            "id": ids.chat_completion_id(),
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": model,
            "system_fingerprint": ids.system_fingerprint(),
            "service_tier": "default",
        }

    def _chunk(self, delta: ChoiceDelta, finish_reason: FinishReason | None = None) -> ChatChunk:
        choices: list[ChunkChoice] = [
            {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
        ]
        if self._include_usage:
            counted: UsageChunk = {**self._prefix, "choices": choices, "usage": None}
            return counted
        return {**self._prefix, "choices": choices}

    def start(self) -> ChatChunk:
        return self._chunk({"role": "assistant", "content": ""})

    def text_delta(self, text: str) -> ChatChunk:
        return self._chunk({"content": text})

    def end(self, event: Finished | Interrupted) -> list[ChatChunk]:
        chunks: list[ChatChunk] = []
        calls = tool_calls(event)
        if calls:
            chunks.append(
                self._chunk({"tool_calls": [{"index": i, **call} for i, call in enumerate(calls)]})
            )
        chunks.append(self._chunk({}, "tool_calls" if calls else "stop"))
        if self._include_usage:
            last: UsageChunk = {**self._prefix, "choices": [], "usage": usage_object(event.usage)}
            chunks.append(last)
        return chunks

    @staticmethod
    def error(message: str = SERVER_ERROR_MESSAGE) -> ErrorEnvelope:
        return error_body(message, error_type="server_error", code="server_error")
