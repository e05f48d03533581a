"""Neutral run events: what a graph run tells the wire encoders, in order.

A run yields any number of `TextDelta` and `Commentary` events, then exactly one terminal
event: `Finished` or `Interrupted`. Failures are exceptions, not events.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from langchain_core.messages import AIMessage

from lgos.core.json_schema import JsonSchema
from lgos.core.records import per_request


@dataclass(frozen=True, slots=True)
class TextDelta:
    text: str


@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """Streamed reasoning of the answering model (LangChain `reasoning` content blocks)."""

    text: str


@dataclass(frozen=True, slots=True)
class Commentary:
    """A complete progress message from `status_event(...)`."""

    text: str


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens spent by every model call of one run (zeros when the graph called none)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cached_tokens: int = 0
    cache_write_tokens: int = 0
    reasoning_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens


# The usage of a run that called no model, shared (the dataclass is frozen): most runs of a
# graph without a model, and every answer that reports none, would build it again.
NO_USAGE = Usage()


@dataclass(frozen=True, slots=True)
class Citation:
    """A source the answer cites; indexes are into the answer text (end exclusive)."""

    url: str
    title: str
    start_index: int
    end_index: int

    @classmethod
    def from_message(cls, message: AIMessage) -> tuple[Citation, ...]:
        """Citations from LangChain's standard text blocks, re-based onto the joined text."""
        if isinstance(message.content, str):
            return ()
        citations: list[Citation] = []
        offset = 0
        for block in message.content_blocks:
            if block.get("type") != "text":
                continue
            text = str(block.get("text", ""))
            for annotation in block.get("annotations", None) or ():  # type: ignore[attr-defined]
                url = annotation.get("url") if annotation.get("type") == "citation" else None
                if not url:
                    continue
                start = int(annotation.get("start_index", 0) or 0)
                end = int(annotation.get("end_index", len(text)) or len(text))
                citations.append(
                    cls(url, str(annotation.get("title") or url), offset + start, offset + end)
                )
            offset += len(text)
        return tuple(citations)


@per_request
class Finished:
    """The run ended with an answer. `text` is the answer text streamed or not."""

    message: AIMessage
    text: str
    usage: Usage = NO_USAGE
    citations: tuple[Citation, ...] = ()
    # A thread-keeping graph's checkpoint at the end of the run (the next turn starts there).
    checkpoint_id: str | None = None
    # The answer's reasoning (its `reasoning` content blocks joined), shown as a summary.
    reasoning: str = ""


def reasoning_of(message: Any) -> str:
    """The text of a message's standard `reasoning` content blocks."""
    if isinstance(message.content, str):
        return ""
    return "".join(
        str(block.get("reasoning") or "")
        for block in message.content_blocks
        if block.get("type") == "reasoning"
    )


@dataclass(frozen=True, slots=True)
class PendingInterrupt:
    """A question the graph is waiting on. `id` is LangGraph's interrupt id."""

    id: str
    value: Any
    response_schema: JsonSchema | None


@dataclass(frozen=True, slots=True)
class Interrupted:
    """The run paused; it resumes through `run_id` (in the Response id) and these ids."""

    run_id: str
    interrupts: tuple[PendingInterrupt, ...]
    text: str
    usage: Usage = NO_USAGE
    checkpoint_id: str | None = None


RunEvent = TextDelta | ReasoningDelta | Commentary | Finished | Interrupted
