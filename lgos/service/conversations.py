"""The Conversations API: durable conversations that `responses.create(conversation=...)`
extends. For a graph that keeps its own state, a conversation is also one LangGraph thread
per model; deleting the conversation deletes those threads' checkpoints."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lgos.core.errors import NotFoundError
from lgos.core.registry import GraphRegistry
from lgos.core.stored import StoredConversation, now
from lgos.service.stateful import Page, StatefulResponses
from lgos.wire import conversations as wire
from lgos.wire import ids, items
from lgos.wire.types.items import (
    Conversation,
    DeletedConversation,
    ItemList,
    StoredItem,
    as_item,
    as_items,
)


class Conversations:
    def __init__(self, stateful: StatefulResponses, registry: GraphRegistry) -> None:
        self.stateful = stateful
        self.store = stateful.store
        self.registry = registry

    async def create(self, scope: str, data: Mapping[str, Any]) -> Conversation:
        initial, metadata = wire.decode_create(data)
        conversation = StoredConversation(id=ids.conversation_id(), owner_scope=scope)
        conversation = conversation.model_copy(update={"metadata": metadata})
        await self.store.put_conversation(conversation)
        await self.store.add_items(conversation.id, items.stored_items(initial))
        return wire.conversation_object(conversation)

    async def retrieve(self, scope: str, conversation_id: str) -> Conversation:
        found = await self.stateful.conversation(conversation_id, scope)
        return wire.conversation_object(found)

    async def update(
        self, scope: str, conversation_id: str, data: Mapping[str, Any]
    ) -> Conversation:
        metadata = wire.decode_update(data)
        found = await self.stateful.conversation(conversation_id, scope)
        found = found.model_copy(update={"metadata": metadata, "updated_at": now()})
        await self.store.put_conversation(found)
        return wire.conversation_object(found)

    async def delete(self, scope: str, conversation_id: str) -> DeletedConversation:
        found = await self.stateful.conversation(conversation_id, scope)
        run_id = ids.parse_conversation_id(found.id)
        if run_id is not None:
            await self.stateful.delete_threads(scope, run_id)
        await self.store.delete_conversation(found.id, scope)
        return wire.deleted_object(found.id)

    async def list_items(self, scope: str, conversation_id: str, page: Page) -> ItemList:
        found = await self.stateful.conversation(conversation_id, scope)
        chosen, more = await self.store.list_items(
            found.id, after=page.after, limit=page.limit, order=page.order
        )
        return items.item_list(as_items(chosen), more)

    async def add_items(
        self, scope: str, conversation_id: str, data: Mapping[str, Any]
    ) -> ItemList:
        found = await self.stateful.conversation(conversation_id, scope)
        added = items.stored_items(wire.decode_items(data))
        await self.store.add_items(found.id, added)
        await self.store.put_conversation(found.model_copy(update={"updated_at": now()}))
        return items.item_list(added, False)

    async def get_item(self, scope: str, conversation_id: str, item_id: str) -> StoredItem:
        found = await self.stateful.conversation(conversation_id, scope)
        item = await self.store.get_item(found.id, item_id)
        if item is None:
            raise _item_not_found(item_id)
        return as_item(item)

    async def delete_item(self, scope: str, conversation_id: str, item_id: str) -> Conversation:
        found = await self.stateful.conversation(conversation_id, scope)
        if not await self.store.delete_item(found.id, item_id):
            raise _item_not_found(item_id)
        return wire.conversation_object(found)


def _item_not_found(item_id: str) -> NotFoundError:
    return NotFoundError(f"Item with id '{item_id}' not found.", param="item_id")
