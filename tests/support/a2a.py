"""The official `a2a-sdk` client as the A2A tests use it: a client of one agent URL, and the
user messages they send."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx
from a2a.client import Client, ClientConfig, create_client
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, Task
from google.protobuf.struct_pb2 import Struct


@asynccontextmanager
async def a2a_client(
    url: str,
    *,
    streaming: bool = False,
    http_timeout: float = 60,
    headers: Mapping[str, str] | None = None,
) -> AsyncIterator[Client]:
    """A client of the agent at `url` (its card is read from there), closed after the block."""
    async with httpx.AsyncClient(headers=headers, timeout=http_timeout) as http:
        client = await create_client(url, ClientConfig(streaming=streaming, httpx_client=http))
        try:
            yield client
        finally:
            await client.close()


def user_message(
    text: str | None = None,
    *,
    task: Task | None = None,
    settings: dict[str, Any] | None = None,
    data: dict[str, Any] | None = None,
) -> SendMessageRequest:
    """A user's message: its text and data parts, in `task` when given (a reply), with graph
    settings in its metadata when given."""
    message = Message(message_id=uuid.uuid4().hex, role=Role.ROLE_USER)
    if text is not None:
        message.parts.append(Part(text=text))
    if data is not None:
        part = Part()
        part.data.struct_value.update(data)
        message.parts.append(part)
    if task is not None:
        message.task_id, message.context_id = task.id, task.context_id
    if settings is not None:
        metadata = Struct()
        metadata.update({"lgos_settings": settings})
        message.metadata.CopyFrom(metadata)
    return SendMessageRequest(message=message)
