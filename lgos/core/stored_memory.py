"""The default store: in this process's memory, gone when it stops."""

from __future__ import annotations

import dataclasses
import json
import operator
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NamedTuple, TypeVar

import orjson
from pydantic_core import to_json

from lgos.core.event_log import InMemoryResponseEventLog
from lgos.core.stored import Order, StoredConversation, StoredResponse

# Any JSON object with an `id`: a stored item, as the store keeps it or the wire types it.
_Item = TypeVar("_Item", bound=Mapping[str, Any])


def page(
    items: Sequence[_Item], *, after: str | None, limit: int, order: Order
) -> tuple[list[_Item], bool]:
    """OpenAI's cursor pagination over an ordered list: the items after the one with id
    `after`, in `order`. An unknown `after` gives an empty page."""
    ordered = list(items) if order == "asc" else list(reversed(items))
    start = 0
    if after is not None:
        positions = [index for index, item in enumerate(ordered) if item.get("id") == after]
        if not positions:
            return [], False
        start = positions[0] + 1
    chosen = ordered[start : start + limit]
    return chosen, start + limit < len(ordered)


# The default store is for trials and tests: past this many Responses (or Conversations) the
# oldest go first, so a long-running process does not grow without bound.
MAX_RECORDS = 1_000


class _Kept(NamedTuple):
    """A stored Response as this store keeps it: the fields its own checks read, and the
    record as one JSON text, which a read parses (as the PostgreSQL store's reads do): an
    array of its field values in `_FIELDS`' order.

    A record's Response, items and history are dozens of dicts and lists: kept as they are, a
    full store held tens of thousands of objects that every full garbage collection walked and
    that an eviction freed one by one, long after their memory left the CPU's caches; and the
    next request could not reuse the memory of the last one's Response. As one `bytes`, a
    record is two objects (docs/benchmarks.md, 2026-12-07, third round)."""

    owner_scope: str
    created_at: int
    events_key: str | None
    record: bytes
    # What reads `record` back value for value: orjson, or for a record it could not write
    # (an integer past 64 bits, which orjson would also read back as a float) the stdlib's.
    loads: Callable[[bytes], Any]


# A record's fields, in the order its JSON array lists them. An array rather than the
# dataclass: orjson writes a dataclass by looking up each field by name, and the array costs
# about 3 us less of a one-at-a-time request in a server (docs/benchmarks.md, 2026-12-07,
# fourth round). The names are written once, here, not into every record.
_FIELDS = tuple(field.name for field in dataclasses.fields(StoredResponse))
_values = operator.attrgetter(*_FIELDS)


def _kept(record: StoredResponse) -> _Kept:
    values = _values(record)
    loads: Callable[[bytes], Any] = orjson.loads
    try:
        text = orjson.dumps(values)
    except TypeError:
        text, loads = to_json(values), json.loads
    return _Kept(record.owner_scope, record.created_at, record.events_key, text, loads)


def _record(kept: _Kept) -> StoredResponse:
    return StoredResponse(**dict(zip(_FIELDS, kept.loads(kept.record), strict=True)))


class InMemoryResponseStore:
    def __init__(self, max_records: int = MAX_RECORDS) -> None:
        self.max_records = max_records
        self._responses: dict[str, _Kept] = {}
        self._deleted: dict[str, float] = {}
        self._conversations: dict[str, StoredConversation] = {}
        self._items: dict[str, list[Mapping[str, Any]]] = {}
        self._threads: dict[str, float] = {}
        self._events = InMemoryResponseEventLog()

    @property
    def events(self) -> InMemoryResponseEventLog:
        return self._events

    async def put_response(self, record: StoredResponse) -> None:
        if record.id in self._deleted:
            return
        self._responses.pop(record.id, None)  # a replaced record counts as the newest
        self._responses[record.id] = _kept(record)
        while len(self._responses) > self.max_records:
            oldest = next(iter(self._responses))  # dicts keep insertion order
            evicted = self._responses.pop(oldest)
            # Its events live under `events_key` (a background run's under the run's key, not
            # the Response id); a Response without one has none (every record of this store
            # has the field).
            if evicted.events_key is not None:
                await self._events.delete([evicted.events_key])

    async def put_response_and_log(
        self, record: StoredResponse, log_key: str, events: Sequence[Mapping[str, Any]]
    ) -> None:
        await self.put_response(record)
        await self._events.append(log_key, events)

    async def get_response(self, response_id: str, owner_scope: str) -> StoredResponse | None:
        kept = self._responses.get(response_id)
        return _record(kept) if kept is not None and kept.owner_scope == owner_scope else None

    async def get_response_and_last(
        self, response_id: str, owner_scope: str, log_key: str
    ) -> tuple[StoredResponse | None, Mapping[str, Any] | None]:
        record = await self.get_response(response_id, owner_scope)
        return record, None if record is None else await self._events.last(log_key)

    async def delete_response(self, response_id: str, owner_scope: str) -> bool:
        kept = self._responses.get(response_id)
        if kept is None or kept.owner_scope != owner_scope:
            return False
        del self._responses[response_id]
        self._deleted[response_id] = time.time()
        await self._events.delete([response_id])
        return True

    async def is_deleted(self, response_id: str) -> bool:
        return response_id in self._deleted

    async def put_conversation(self, conversation: StoredConversation) -> None:
        self._conversations[conversation.id] = conversation
        self._items.setdefault(conversation.id, [])
        while len(self._conversations) > self.max_records:
            oldest = next(iter(self._conversations))
            del self._conversations[oldest]
            self._items.pop(oldest, None)

    async def get_conversation(
        self, conversation_id: str, owner_scope: str
    ) -> StoredConversation | None:
        found = self._conversations.get(conversation_id)
        return found if found is not None and found.owner_scope == owner_scope else None

    async def delete_conversation(self, conversation_id: str, owner_scope: str) -> bool:
        if await self.get_conversation(conversation_id, owner_scope) is None:
            return False
        del self._conversations[conversation_id]
        self._items.pop(conversation_id, None)
        return True

    async def add_items(self, conversation_id: str, items: Sequence[Mapping[str, Any]]) -> None:
        self._items.setdefault(conversation_id, []).extend(items)

    async def list_items(
        self, conversation_id: str, *, after: str | None, limit: int, order: Order
    ) -> tuple[list[Mapping[str, Any]], bool]:
        return page(self._items.get(conversation_id, []), after=after, limit=limit, order=order)

    async def all_items(self, conversation_id: str) -> list[Mapping[str, Any]]:
        return list(self._items.get(conversation_id, []))

    async def get_item(self, conversation_id: str, item_id: str) -> Mapping[str, Any] | None:
        for item in self._items.get(conversation_id, []):
            if item.get("id") == item_id:
                return item
        return None

    async def delete_item(self, conversation_id: str, item_id: str) -> bool:
        items = self._items.get(conversation_id, [])
        kept = [item for item in items if item.get("id") != item_id]
        self._items[conversation_id] = kept
        return len(kept) != len(items)

    async def touch_thread(self, thread_id: str) -> None:
        self._threads[thread_id] = time.time()

    async def forget_thread(self, thread_id: str) -> None:
        self._threads.pop(thread_id, None)

    async def expire(self, cutoff: int, limit: int) -> tuple[int, list[str]]:
        old = [key for key, record in self._responses.items() if record.created_at < cutoff]
        old = old[:limit]
        expired = [self._responses.pop(key) for key in old]
        # As on eviction: a Response's events live under its `events_key`, if it has any.
        await self._events.delete(
            [kept.events_key for kept in expired if kept.events_key is not None]
        )
        for key in [key for key, at in self._deleted.items() if at < cutoff]:
            del self._deleted[key]
        conversations = [
            key for key, found in self._conversations.items() if found.updated_at < cutoff
        ][:limit]
        for key in conversations:
            del self._conversations[key]
            self._items.pop(key, None)
        threads = [key for key, at in self._threads.items() if at < cutoff][:limit]
        return len(old) + len(conversations), threads
