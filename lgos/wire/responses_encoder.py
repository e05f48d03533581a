"""Responses API objects and the stream events, built from neutral run events.

The stream is a list of event objects (plain dicts typed by `lgos.wire.types`): the caller
frames them as SSE or, for a streamed background Response, stores them in the event log as they
are.

Every Response carries the full Open Responses field set (nulls where empty), which the
official SDK in strict mode and Open Responses validators both accept.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Literal

from langchain_core.messages import AIMessage
from pydantic import JsonValue

from lgos.core.background import TERMINAL_STATUSES, ResponseStatus
from lgos.core.request import Reasoning, ResponseFormat
from lgos.core.run_events import (
    NO_USAGE,
    Citation,
    Commentary,
    Finished,
    Interrupted,
    Usage,
)
from lgos.wire import ids
from lgos.wire.error_envelope import SERVER_ERROR_MESSAGE
from lgos.wire.interrupts import INTERRUPT_FUNCTION, interrupt_arguments, interrupt_call_id
from lgos.wire.types.events import (
    AnnotationAddedEvent,
    ContentPartEvent,
    ErrorEvent,
    FunctionCallArgumentsDeltaEvent,
    FunctionCallArgumentsDoneEvent,
    ItemPlace,
    LifecycleEventType,
    OutputItemEvent,
    OutputTextDeltaEvent,
    OutputTextDoneEvent,
    ReasoningSummaryPartEvent,
    ReasoningSummaryTextDeltaEvent,
    ReasoningSummaryTextDoneEvent,
    ResponseLifecycleEvent,
    StreamEvent,
    SummaryPlace,
    TextPlace,
)
from lgos.wire.types.responses import (
    FunctionCallItem,
    ItemStatus,
    MessageItem,
    MessagePhase,
    OutputItem,
    OutputText,
    ReasoningConfig,
    ReasoningItem,
    ResponseError,
    ResponseObject,
    ResponseUsage,
    SummaryText,
    TextFormat,
    UrlCitation,
)


@dataclass(slots=True)
class ResponseEcho:
    """The request-derived fields every snapshot of one Response echoes (its id included)."""

    id: str
    model: str
    instructions: str | None = None
    metadata: Mapping[str, str] = field(default_factory=dict)
    tools: list[dict[str, JsonValue]] = field(default_factory=list)  # as the client sent them
    tool_choice: str | dict[str, JsonValue] = "auto"  # a mode, or a choice object of any kind
    parallel_tool_calls: bool = True
    previous_response_id: str | None = None
    background: bool = False
    store: bool = False
    user: str | None = None
    conversation: str | None = None
    # The requested answer shape, as `text.format` (see `echo_format`).
    text_format: TextFormat = field(default_factory=lambda: echo_format(None))
    # The request's `reasoning` options, echoed; reasoning summaries are shown only when
    # `summary` asks for them (else reasoning items carry an empty summary, as OpenAI's do).
    reasoning: ReasoningConfig | None = None
    truncation: str = "disabled"
    created_at: int = field(default_factory=lambda: int(time.time()))

    @property
    def reasoning_summary(self) -> bool:
        return bool(self.reasoning and self.reasoning.get("summary"))

    def snapshot(
        self,
        status: ResponseStatus,
        output: list[OutputItem] | None = None,
        *,
        usage: Usage | None = None,
        error: ResponseError | None = None,
    ) -> ResponseObject:
        # The template's copy keeps its keys' order; only the fields that vary are set.
        response = _SNAPSHOT.copy()
        response["id"] = self.id
        response["created_at"] = self.created_at
        if status == "completed":
            response["completed_at"] = int(time.time())
        response["status"] = status
        response["background"] = self.background
        response["store"] = self.store
        response["model"] = self.model
        response["previous_response_id"] = self.previous_response_id
        response["instructions"] = self.instructions
        response["output"] = output or []
        response["error"] = error
        # A Response that ended always reports usage (zeros when the graph called no model),
        # as OpenAI does; one still queued or running reports null.
        if status in TERMINAL_STATUSES:
            response["usage"] = usage_object(usage or NO_USAGE)
        response["metadata"] = dict(self.metadata)
        response["tools"] = self.tools
        response["tool_choice"] = self.tool_choice
        response["parallel_tool_calls"] = self.parallel_tool_calls
        response["truncation"] = self.truncation
        response["text"] = {"format": self.text_format}
        response["reasoning"] = self.reasoning
        response["user"] = self.user
        if self.conversation:
            response["conversation"] = {"id": self.conversation}
        return response


# Every field of a Response snapshot in wire order, holding the values that never vary (and
# null for those `snapshot` may leave unset; its lists and dicts are always replaced, never
# shared). Copying it and setting the varying fields cost about 14k CPU instructions against
# 25k for the 33-key literal they replace (Callgrind, docs/benchmarks.md, 2026-12-05, third).
_SNAPSHOT: ResponseObject = {
    "id": "",
    "object": "response",
    "created_at": 0,
    "completed_at": None,
    "status": "completed",
    "background": False,
    "store": False,
    "model": "",
    "previous_response_id": None,
    "instructions": None,
    "output": [],
    "error": None,
    "incomplete_details": None,
    "usage": None,
    "metadata": {},
    "tools": [],
    "tool_choice": "auto",
    "parallel_tool_calls": True,
    "temperature": 1.0,
    "top_p": 1.0,
    "presence_penalty": 0.0,
    "frequency_penalty": 0.0,
    "top_logprobs": 0,
    "max_output_tokens": None,
    "max_tool_calls": None,
    "truncation": "disabled",
    "text": {"format": {"type": "text"}},
    "reasoning": None,
    "user": None,
    "service_tier": "default",
    "safety_identifier": None,
    "prompt_cache_key": None,
    "conversation": None,
}


def usage_object(usage: Usage) -> ResponseUsage:
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {
            "cached_tokens": usage.cached_tokens,
            "cache_write_tokens": usage.cache_write_tokens,
        },
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_tokens,
    }


def failure(message: str = SERVER_ERROR_MESSAGE) -> ResponseError:
    return {"code": "server_error", "message": message}


def text_part(text: str, annotations: list[UrlCitation] | None = None) -> OutputText:
    return {"type": "output_text", "text": text, "annotations": annotations or [], "logprobs": []}


def url_citations(citations: Iterable[Citation]) -> list[UrlCitation]:
    return [
        {
            "type": "url_citation",
            "url": citation.url,
            "title": citation.title,
            "start_index": citation.start_index,
            "end_index": citation.end_index,
        }
        for citation in citations
    ]


def message_item(
    item_id: str,
    text: str,
    phase: MessagePhase,
    status: ItemStatus = "completed",
    annotations: list[UrlCitation] | None = None,
) -> MessageItem:
    return {
        "type": "message",
        "id": item_id,
        "role": "assistant",
        "status": status,
        "phase": phase,
        "content": [text_part(text, annotations)],
    }


def function_call_item(call_id: str, name: str, arguments: str) -> FunctionCallItem:
    return {
        "type": "function_call",
        "id": ids.function_call_item_id(),
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def interrupt_items(event: Interrupted) -> list[FunctionCallItem]:
    return [
        function_call_item(
            interrupt_call_id(event.run_id, pending.id),
            INTERRUPT_FUNCTION,
            interrupt_arguments(pending),
        )
        for pending in event.interrupts
    ]


def tool_call_items(message: AIMessage) -> list[FunctionCallItem]:
    return [
        function_call_item(
            call.get("id") or ids.tool_call_id(), call["name"], json.dumps(call["args"])
        )
        for call in message.tool_calls
    ]


def final_output(event: Finished, *, summary: bool = True) -> list[OutputItem]:
    """Non-streaming output: the answer (if any), then function calls."""
    items: list[OutputItem] = [*tool_call_items(event.message)]
    if event.text or not items:
        annotations = url_citations(event.citations)
        items.insert(
            0, message_item(ids.message_id(), event.text, "final_answer", annotations=annotations)
        )
    if event.reasoning:
        items.insert(0, reasoning_item(ids.reasoning_id(), event.reasoning if summary else ""))
    return items


def reasoning_item(item_id: str, summary: str) -> ReasoningItem:
    """A reasoning item; an empty `summary` text means none was asked for."""
    parts: list[SummaryText] = [{"type": "summary_text", "text": summary}] if summary else []
    return {"type": "reasoning", "id": item_id, "summary": parts}


class ResponsesStream:
    """Encodes one Response's stream events. Sequence numbers start at 0 and only grow."""

    __slots__ = (
        "_answer_id",
        "_answer_index",
        "_answer_text",
        "_context",
        "_output",
        "_reasoning",
        "_sequence",
    )

    def __init__(self, context: ResponseEcho, sequence: int = 0) -> None:
        self._context = context
        # A background worker continues the stream the API began (or a dead worker left).
        self._sequence = sequence
        self._output: list[OutputItem] = []
        self._answer_id: str | None = None
        self._answer_index = -1
        self._answer_text: list[str] = []
        self._reasoning = ReasoningSummary(self)

    def _next(self) -> int:
        """The next event's sequence number (every event ends with its `type` and this)."""
        number = self._sequence
        self._sequence += 1
        return number

    def _lifecycle(
        self, event_type: LifecycleEventType, response: ResponseObject
    ) -> ResponseLifecycleEvent:
        return {"response": response, "type": event_type, "sequence_number": self._next()}

    def _item_event(
        self,
        event_type: Literal["response.output_item.added", "response.output_item.done"],
        index: int,
        item: OutputItem,
    ) -> OutputItemEvent:
        return {
            "output_index": index,
            "item": item,
            "type": event_type,
            "sequence_number": self._next(),
        }

    def start(self) -> list[StreamEvent]:
        snapshot = self._context.snapshot("in_progress")
        return [
            self._lifecycle("response.created", snapshot),
            self._lifecycle("response.in_progress", snapshot),
        ]

    def queued(self) -> list[StreamEvent]:
        """How a streamed background Response begins, before a worker takes it."""
        snapshot = self._context.snapshot("queued")
        return [
            self._lifecycle("response.created", snapshot),
            self._lifecycle("response.queued", snapshot),
        ]

    def in_progress(self) -> StreamEvent:
        return self._lifecycle("response.in_progress", self._context.snapshot("in_progress"))

    def reasoning_delta(self, text: str) -> list[StreamEvent]:
        return self._reasoning.delta(text)

    def text_delta(self, text: str) -> list[StreamEvent]:
        events = self._reasoning.close()
        if self._answer_id is None:
            events += self._open_answer()
        assert self._answer_id is not None  # opened just above, if it was not open
        self._answer_text.append(text)
        events.append(
            {
                "item_id": self._answer_id,
                "output_index": self._answer_index,
                "content_index": 0,
                "delta": text,
                "logprobs": [],
                "type": "response.output_text.delta",
                "sequence_number": self._next(),
            }
        )
        return events

    def commentary(self, event: Commentary) -> list[StreamEvent]:
        item = message_item(ids.message_id(), event.text, "commentary")
        return self._reasoning.close() + self._complete_item(item, text=event.text)

    def finished(self, event: Finished) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        if event.reasoning and not self._reasoning.shown:  # not streamed: shown whole
            events += self._reasoning.delta(event.reasoning)
        events += self._reasoning.close() + self._close_answer(url_citations(event.citations))
        for item in tool_call_items(event.message):
            events.extend(self._complete_item(item))
        if not any(item["type"] != "reasoning" for item in self._output):
            events.extend(self._open_answer())
            events.extend(self._close_answer([]))
        events.append(self._terminal("response.completed", "completed", usage=event.usage))
        return events

    def interrupted(self, event: Interrupted) -> list[StreamEvent]:
        events = self._reasoning.close() + self._close_answer([])
        for item in interrupt_items(event):
            events.extend(self._complete_item(item))
        events.append(self._terminal("response.completed", "completed", usage=event.usage))
        return events

    def failed(
        self,
        message: str = SERVER_ERROR_MESSAGE,
        code: str = "server_error",
        *,
        client_error: bool = False,
    ) -> list[StreamEvent]:
        """An `error` event (nested and flat forms, see the protocol notes), then
        `response.failed`. Items already shown stay; an open answer becomes incomplete.

        The `error` event carries `code` as it is; the Response's `error.code` is one OpenAI
        defines: `invalid_prompt` for a request the run refused (`client_error`), else
        `server_error`."""
        error: ErrorEvent = {
            "code": code,
            "message": message,
            "param": None,
            "error": {"type": "server_error", "code": code, "message": message, "param": None},
            "type": "error",
            "sequence_number": self._next(),
        }
        events: list[StreamEvent] = [error]
        self._reasoning.abandon()
        if self._answer_id is not None:
            answer = self._output[self._answer_index]
            assert answer["type"] == "message"  # the open answer
            answer["status"] = "incomplete"
            answer["content"] = [text_part("".join(self._answer_text))]
            self._answer_id = None
        events.append(
            self._terminal(
                "response.failed",
                "failed",
                error={
                    "code": "invalid_prompt" if client_error else "server_error",
                    "message": message,
                },
            )
        )
        return events

    def _open_answer(self) -> list[StreamEvent]:
        answer_id = self._answer_id = ids.message_id()
        self._answer_index = len(self._output)
        item: MessageItem = {
            "type": "message",
            "id": answer_id,
            "role": "assistant",
            "status": "in_progress",
            "phase": "final_answer",
            "content": [],
        }
        self._output.append(item)
        added = self._item_event("response.output_item.added", self._answer_index, item)
        part: ContentPartEvent = {
            "item_id": answer_id,
            "output_index": self._answer_index,
            "content_index": 0,
            "part": text_part(""),
            "type": "response.content_part.added",
            "sequence_number": self._next(),
        }
        return [added, part]

    def _close_answer(self, annotations: list[UrlCitation]) -> list[StreamEvent]:
        if self._answer_id is None:
            return []
        text = "".join(self._answer_text)
        item = message_item(self._answer_id, text, "final_answer", annotations=annotations)
        self._output[self._answer_index] = item
        common: TextPlace = {
            "item_id": self._answer_id,
            "output_index": self._answer_index,
            "content_index": 0,
        }
        events: list[StreamEvent] = []
        for index, annotation in enumerate(annotations):
            added: AnnotationAddedEvent = {
                **common,
                "annotation_index": index,
                "annotation": annotation,
                "type": "response.output_text.annotation.added",
                "sequence_number": self._next(),
            }
            events.append(added)
        events += self._text_done(common, text, annotations)
        events.append(self._item_event("response.output_item.done", self._answer_index, item))
        self._answer_id = None
        return events

    def _text_done(
        self, where: TextPlace, text: str, annotations: list[UrlCitation] | None = None
    ) -> list[StreamEvent]:
        """A text part's end: its whole text, then the part as it ends."""
        done: OutputTextDoneEvent = {
            **where,
            "text": text,
            "logprobs": [],
            "type": "response.output_text.done",
            "sequence_number": self._next(),
        }
        part: ContentPartEvent = {
            **where,
            "part": text_part(text, annotations),
            "type": "response.content_part.done",
            "sequence_number": self._next(),
        }
        return [done, part]

    def _complete_item(
        self, item: MessageItem | FunctionCallItem, text: str | None = None
    ) -> list[StreamEvent]:
        """Emit a whole item at once: added, its content or arguments, done."""
        index = len(self._output)
        self._output.append(item)
        if item["type"] == "message":
            opened: MessageItem = {**item, "status": "in_progress", "content": []}
            common: TextPlace = {"item_id": item["id"], "output_index": index, "content_index": 0}
            added = self._item_event("response.output_item.added", index, opened)
            part: ContentPartEvent = {
                **common,
                "part": text_part(""),
                "type": "response.content_part.added",
                "sequence_number": self._next(),
            }
            delta: OutputTextDeltaEvent = {
                **common,
                "delta": text or "",
                "logprobs": [],
                "type": "response.output_text.delta",
                "sequence_number": self._next(),
            }
            return [
                added,
                part,
                delta,
                *self._text_done(common, text or ""),
                self._item_event("response.output_item.done", index, item),
            ]
        called: FunctionCallItem = {**item, "arguments": "", "status": "in_progress"}
        place: ItemPlace = {"item_id": item["id"], "output_index": index}
        added = self._item_event("response.output_item.added", index, called)
        arguments: FunctionCallArgumentsDeltaEvent = {
            **place,
            "delta": item["arguments"],
            "type": "response.function_call_arguments.delta",
            "sequence_number": self._next(),
        }
        done: FunctionCallArgumentsDoneEvent = {
            **place,
            "name": item["name"],
            "arguments": item["arguments"],
            "type": "response.function_call_arguments.done",
            "sequence_number": self._next(),
        }
        return [added, arguments, done, self._item_event("response.output_item.done", index, item)]

    def _terminal(
        self,
        event_type: LifecycleEventType,
        status: ResponseStatus,
        *,
        usage: Usage | None = None,
        error: ResponseError | None = None,
    ) -> StreamEvent:
        snapshot = self._context.snapshot(status, self._output, usage=usage, error=error)
        return self._lifecycle(event_type, snapshot)


class ReasoningSummary:
    """The reasoning item of one stream: opened by the first delta, closed (done events) when
    anything else is shown, with one summary part."""

    __slots__ = ("_id", "_index", "_stream", "_text", "shown")

    def __init__(self, stream: ResponsesStream) -> None:
        self._stream = stream
        self._id: str | None = None
        self._index = -1
        self._text: list[str] = []
        self.shown = False

    def delta(self, text: str) -> list[StreamEvent]:
        stream = self._stream
        summarised = stream._context.reasoning_summary
        events: list[StreamEvent] = []
        if self._id is None:
            self._id = ids.reasoning_id()
            self._index = len(stream._output)
            self._text = []
            self.shown = True
            item: ReasoningItem = {"type": "reasoning", "id": self._id, "summary": []}
            stream._output.append(item)
            events.append(stream._item_event("response.output_item.added", self._index, item))
            if summarised:
                events.append(self._part("response.reasoning_summary_part.added", ""))
        if not summarised:
            return events
        self._text.append(text)
        delta: ReasoningSummaryTextDeltaEvent = {
            **self._where(),
            "delta": text,
            "type": "response.reasoning_summary_text.delta",
            "sequence_number": stream._next(),
        }
        events.append(delta)
        return events

    def close(self) -> list[StreamEvent]:
        if self._id is None:
            return []
        stream = self._stream
        text = "".join(self._text)
        item = reasoning_item(self._id, text)
        stream._output[self._index] = item
        events: list[StreamEvent] = []
        if stream._context.reasoning_summary:
            done: ReasoningSummaryTextDoneEvent = {
                **self._where(),
                "text": text,
                "type": "response.reasoning_summary_text.done",
                "sequence_number": stream._next(),
            }
            events += [done, self._part("response.reasoning_summary_part.done", text)]
        events.append(stream._item_event("response.output_item.done", self._index, item))
        self._id = None
        return events

    def abandon(self) -> None:
        """A failed run: the summary so far stays in the output."""
        if self._id is not None:
            self._stream._output[self._index] = reasoning_item(self._id, "".join(self._text))
            self._id = None

    def _part(
        self,
        event_type: Literal[
            "response.reasoning_summary_part.added", "response.reasoning_summary_part.done"
        ],
        text: str,
    ) -> ReasoningSummaryPartEvent:
        return {
            **self._where(),
            "part": {"type": "summary_text", "text": text},
            "type": event_type,
            "sequence_number": self._stream._next(),
        }

    def _where(self) -> SummaryPlace:
        assert self._id is not None  # only an open reasoning item has events
        return {"item_id": self._id, "output_index": self._index, "summary_index": 0}


def echo_format(response_format: ResponseFormat | None) -> TextFormat:
    """The Response's `text.format`, as the request asked (here, not beside the decoding of
    `text.format`, so a worker rendering a job never loads the decoders)."""
    if response_format is None:
        return {"type": "text"}
    if response_format.type == "json_object":
        return {"type": "json_object"}
    assert response_format.name is not None  # the decoders require a json_schema's name
    return {
        "type": "json_schema",
        "name": response_format.name,
        "schema": dict(response_format.schema or {}),
        "strict": response_format.strict,
        "description": response_format.description,
    }


def echo_reasoning(reasoning: Reasoning | None) -> ReasoningConfig | None:
    """The Response's `reasoning`, as the request asked."""
    if reasoning is None:
        return None
    return {"effort": reasoning.effort, "summary": reasoning.summary}
