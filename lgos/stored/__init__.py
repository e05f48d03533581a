"""Stateful Responses: stored Responses, Conversations and the threads of graphs that keep state."""

from lgos.stored.memory import InMemoryResponseStore
from lgos.stored.protocol import ResponseStore, StoredConversation, StoredResponse

__all__ = ["InMemoryResponseStore", "ResponseStore", "StoredConversation", "StoredResponse"]
