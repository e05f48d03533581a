"""A create without an Idempotency-Key never touches the key store (no read, no write, no
database round trip on PostgreSQL); one with a key does. In-process, the strict SDK."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from fastapi import FastAPI
from openai import AsyncOpenAI

from lgos import LanggraphOpenaiServe
from lgos.core.idempotency import IdempotentOutcome, InMemoryIdempotencyStore, KeyRecord
from tests.support.graphs import Probe, build_registry
from tests.support.sdk import in_process_sdk

pytestmark = pytest.mark.anyio


class CountingStore(InMemoryIdempotencyStore):
    """The in-memory store, counting the calls it gets."""

    def __init__(self) -> None:
        super().__init__()
        self.calls = 0

    async def claim(
        self,
        owner_scope: str,
        key: str,
        request_digest: str,
        token: str,
        *,
        ttl_seconds: float,
        lease_seconds: float,
    ) -> KeyRecord | None:
        self.calls += 1
        return await super().claim(
            owner_scope,
            key,
            request_digest,
            token,
            ttl_seconds=ttl_seconds,
            lease_seconds=lease_seconds,
        )

    async def finish(
        self, owner_scope: str, key: str, token: str, outcome: IdempotentOutcome
    ) -> None:
        self.calls += 1
        await super().finish(owner_scope, key, token, outcome)


@pytest.fixture
async def counted() -> AsyncIterator[tuple[AsyncOpenAI, CountingStore]]:
    store = CountingStore()
    app = FastAPI()
    LanggraphOpenaiServe(build_registry(Probe()), app, idempotency_store=store).bind_openai_api()
    async with in_process_sdk(app) as sdk:
        yield sdk, store


async def test_creates_without_a_key_never_reach_the_store(
    counted: tuple[AsyncOpenAI, CountingStore],
) -> None:
    client, store = counted
    await client.responses.create(model="echo", input="hi")
    async for _ in await client.responses.create(model="echo", input="hi", stream=True):
        pass
    await client.chat.completions.create(model="echo", messages=[{"role": "user", "content": "hi"}])
    conversation = await client.conversations.create()
    await client.conversations.items.create(
        conversation.id, items=[{"type": "message", "role": "user", "content": "note"}]
    )
    assert store.calls == 0
    await client.responses.create(model="echo", input="hi", extra_headers={"Idempotency-Key": "k"})
    assert store.calls == 2  # the claim, then the outcome
