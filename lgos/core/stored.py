"""What the server keeps of stateful Responses: stored Responses, Conversations, threads.

A stored Response keeps its own input items, the items that came before them in its
conversation (what a graph without memory of its own must be sent again next turn), and its
final JSON. A background Response's JSON stays with the engine: its record only indexes it (so
it can be deleted and chained) and carries what the engine does not know.

A Conversation is an ordered list of items. For a graph that keeps its own state, it is also
one LangGraph thread per model; `heads` remembers, per model, the checkpoint its last turn
left, which the next turn starts from.

Every read names the owner scope: another scope's id is the same as an unknown one.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, Field

from lgos.core.background import ResponseEventLog

Order = Literal["asc", "desc"]


def now() -> int:
    return int(time.time())


# A slotted dataclass, not a Pydantic model: a stored foreground Response is built on every
# stored request from the Response just made (nothing to validate), and `model_construct`'s
# loop over the fields cost about 48k CPU instructions per request against about 9k for this
# (docs/benchmarks.md, 2026-12-05, second round). The PostgreSQL store validates and dumps it
# through a `TypeAdapter`, as it did the model.
@dataclass(slots=True, kw_only=True)
class StoredResponse:
    id: str
    owner_scope: str
    model: str
    created_at: int = field(default_factory=now)
    # JSON columns, read back as stored (the service layer reads them as the wire's types):
    # this Response's input items,
    input_items: Sequence[Mapping[str, Any]] = field(default_factory=list)
    # the conversation before them (earlier turns' input and output items, in order),
    history: Sequence[Mapping[str, Any]] = field(default_factory=list)
    # and the final Response; None for a background Response (the engine holds it).
    response: Mapping[str, Any] | None = None
    background: bool = False
    # Created with stream=true: it has events in the store's event log (under `events_key`).
    stream: bool = False
    # Where the event log keeps this Response's events, if it can have any: its id for a
    # foreground stream, its engine run id for a background Response (workers log there,
    # streamed or not). Expiring the Response deletes them; None in records made before this
    # field existed, whose events are looked for under the id.
    events_key: str | None = None
    conversation_id: str | None = None
    # For a graph that keeps its own state: the thread checkpoint this turn ended on ("" for
    # the thread's latest: a background turn, whose worker does not report it).
    checkpoint_id: str | None = None


class StoredConversation(BaseModel):
    id: str
    owner_scope: str
    created_at: int = Field(default_factory=now)
    # Last turn or change: retention counts from here.
    updated_at: int = Field(default_factory=now)
    metadata: dict[str, str] = Field(default_factory=dict)
    # model → the checkpoint its graph's thread reached at the end of the last turn ("" for
    # the thread's latest, after a background turn), and how many items that thread has seen.
    heads: dict[str, str] = Field(default_factory=dict)
    seen: dict[str, int] = Field(default_factory=dict)
    # Background turns whose output is not in the items yet (added once they end).
    pending: list[str] = Field(default_factory=list)


@runtime_checkable
class ResponseStore(Protocol):
    """Where stateful Responses live. Implementations: in memory (one process) and
    PostgreSQL (`lgos.integrations.postgres.stored`)."""

    @property
    def events(self) -> ResponseEventLog:
        """The SSE events of stored streamed Responses, keyed by Response id."""
        ...

    async def put_response(self, record: StoredResponse) -> None:
        """Insert or replace the record with this id."""
        ...

    async def put_response_and_log(
        self, record: StoredResponse, log_key: str, events: Sequence[Mapping[str, Any]]
    ) -> None:
        """`put_response`, and `events` appended to `events` under `log_key`: in one write,
        for a streamed background Response whose engine logs in this store's log (its opening
        events; one statement on PostgreSQL instead of two)."""
        ...

    async def get_response(self, response_id: str, owner_scope: str) -> StoredResponse | None: ...

    async def get_response_and_last(
        self, response_id: str, owner_scope: str, log_key: str
    ) -> tuple[StoredResponse | None, Mapping[str, Any] | None]:
        """`get_response`, and when it finds the record, the last event `events` holds under
        `log_key` (else None): in one read, for a poll of a background Response whose engine
        logs every end in this store's log (one statement on PostgreSQL instead of two)."""
        ...

    async def delete_response(self, response_id: str, owner_scope: str) -> bool:
        """Forget the record (and its events); a later put of the same id is refused by
        `is_deleted`, so a background run that ends after the delete stays deleted."""
        ...

    async def is_deleted(self, response_id: str) -> bool: ...

    async def put_conversation(self, conversation: StoredConversation) -> None:
        """Insert or replace (metadata, heads, pending)."""
        ...

    async def get_conversation(
        self, conversation_id: str, owner_scope: str
    ) -> StoredConversation | None: ...

    async def delete_conversation(self, conversation_id: str, owner_scope: str) -> bool: ...

    async def add_items(self, conversation_id: str, items: Sequence[Mapping[str, Any]]) -> None:
        """Append items (each with its `id`) to the end of the conversation."""
        ...

    async def list_items(
        self, conversation_id: str, *, after: str | None, limit: int, order: Order
    ) -> tuple[list[Mapping[str, Any]], bool]:
        """A page of items and whether more follow. `after` is an item id."""
        ...

    async def all_items(self, conversation_id: str) -> list[Mapping[str, Any]]:
        """Every item, oldest first."""
        ...

    async def get_item(self, conversation_id: str, item_id: str) -> Mapping[str, Any] | None: ...

    async def delete_item(self, conversation_id: str, item_id: str) -> bool: ...

    async def touch_thread(self, thread_id: str) -> None:
        """Record that a thread-keeping graph used this LangGraph thread now."""
        ...

    async def forget_thread(self, thread_id: str) -> None: ...

    async def expire(self, cutoff: int, limit: int) -> tuple[int, list[str]]:
        """Delete Responses created (with their events) and Conversations last used before
        `cutoff` (seconds); return how many were deleted and the threads unused since then
        (still indexed: the caller deletes their checkpoints, then calls `forget_thread`)."""
        ...
