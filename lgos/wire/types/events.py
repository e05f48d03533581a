"""The Responses stream events LGOS emits (`openai.types.responses.Response*Event`).

Every event ends with `type` and `sequence_number`, in that order: the encoder builds each
one's own fields first, so the bytes on the wire keep that key order.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, TypedDict, cast

from lgos.core.background import TerminalEventType
from lgos.wire.types.responses import (
    OutputItem,
    OutputText,
    ResponseObject,
    SummaryText,
    UrlCitation,
)

# The events that carry the whole Response: the lifecycle of one Response (the terminal ones
# are named in core, beside the statuses they end in).
LifecycleEventType = Literal[
    "response.created", "response.queued", "response.in_progress", TerminalEventType
]


class ResponseLifecycleEvent(TypedDict):
    response: ResponseObject
    type: LifecycleEventType
    sequence_number: int


class OutputItemEvent(TypedDict):
    output_index: int
    item: OutputItem
    type: Literal["response.output_item.added", "response.output_item.done"]
    sequence_number: int


class TextPlace(TypedDict):
    """Where a text event points: the message, its place in the output, the content part."""

    item_id: str
    output_index: int
    content_index: int


class ContentPartEvent(TextPlace):
    part: OutputText
    type: Literal["response.content_part.added", "response.content_part.done"]
    sequence_number: int


class OutputTextDeltaEvent(TextPlace):
    delta: str
    logprobs: list[Any]  # always empty: no graph reports log probabilities
    type: Literal["response.output_text.delta"]
    sequence_number: int


class OutputTextDoneEvent(TextPlace):
    text: str
    logprobs: list[Any]  # always empty
    type: Literal["response.output_text.done"]
    sequence_number: int


class AnnotationAddedEvent(TextPlace):
    annotation_index: int
    annotation: UrlCitation
    type: Literal["response.output_text.annotation.added"]
    sequence_number: int


class ItemPlace(TypedDict):
    """Where a function call's events point: the item and its place in the output."""

    item_id: str
    output_index: int


class FunctionCallArgumentsDeltaEvent(ItemPlace):
    delta: str
    type: Literal["response.function_call_arguments.delta"]
    sequence_number: int


class FunctionCallArgumentsDoneEvent(ItemPlace):
    name: str
    arguments: str
    type: Literal["response.function_call_arguments.done"]
    sequence_number: int


class SummaryPlace(TypedDict):
    """Where a reasoning summary's events point: the item, its place, the summary part."""

    item_id: str
    output_index: int
    summary_index: int


class ReasoningSummaryPartEvent(SummaryPlace):
    part: SummaryText
    type: Literal["response.reasoning_summary_part.added", "response.reasoning_summary_part.done"]
    sequence_number: int


class ReasoningSummaryTextDeltaEvent(SummaryPlace):
    delta: str
    type: Literal["response.reasoning_summary_text.delta"]
    sequence_number: int


class ReasoningSummaryTextDoneEvent(SummaryPlace):
    text: str
    type: Literal["response.reasoning_summary_text.done"]
    sequence_number: int


class StreamError(TypedDict):
    type: Literal["server_error"]
    code: str
    message: str
    param: None


class ErrorEvent(TypedDict):
    """The `error` event, flat (as the SDK reads it) and nested (as some clients do)."""

    code: str
    message: str
    param: None
    error: StreamError
    type: Literal["error"]
    sequence_number: int


StreamEvent = (
    ResponseLifecycleEvent
    | OutputItemEvent
    | ContentPartEvent
    | OutputTextDeltaEvent
    | OutputTextDoneEvent
    | AnnotationAddedEvent
    | FunctionCallArgumentsDeltaEvent
    | FunctionCallArgumentsDoneEvent
    | ReasoningSummaryPartEvent
    | ReasoningSummaryTextDeltaEvent
    | ReasoningSummaryTextDoneEvent
    | ErrorEvent
)


def as_events(logged: list[Mapping[str, Any]]) -> list[StreamEvent]:
    """Events read back from an event log: the ones an encoder wrote, stored as JSON and not
    validated again on the way out."""
    return cast("list[StreamEvent]", logged)
