"""The Idempotency-Key store's contract, the same for the in-memory store and PostgreSQL's: a
claim is held until finished or released, a lapsed lease of the same request is taken over
(its holder died), an expired key is new again, and a sweep deletes expired keys."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from lgos import ServerSettings, open_resources
from lgos.core.idempotency import (
    IdempotencyStore,
    IdempotentOutcome,
    InMemoryIdempotencyStore,
    KeyRecord,
)

pytestmark = [pytest.mark.anyio]

HOUR = 3600.0


@pytest.fixture(params=["memory", pytest.param("postgres", marks=pytest.mark.postgres)])
async def store(request: pytest.FixtureRequest) -> AsyncIterator[IdempotencyStore]:
    if request.param == "memory":
        yield InMemoryIdempotencyStore()
        return
    database = request.getfixturevalue("module_database")
    settings = ServerSettings(POSTGRES_URI=database, POSTGRES_POOL_SIZE=2)
    async with open_resources(settings) as resources:
        assert resources.idempotency_store is not None
        yield resources.idempotency_store


async def claim(
    store: IdempotencyStore,
    key: str,
    token: str,
    *,
    digest: str = "d1",
    ttl: float = HOUR,
    lease: float = HOUR,
) -> KeyRecord | None:
    return await store.claim("acme", key, digest, token, ttl_seconds=ttl, lease_seconds=lease)


async def test_a_claim_is_held_then_answers_with_its_outcome(store: IdempotencyStore) -> None:
    assert await claim(store, "k1", "first") is None
    assert await claim(store, "k1", "second") == KeyRecord("d1", None)  # still running
    assert await claim(store, "k1", "other", digest="d2") == KeyRecord("d1", None)
    outcome = IdempotentOutcome(body={"id": "resp_1", "status": "completed"})
    await store.finish("acme", "k1", "second", outcome)  # not its claim: nothing happens
    assert await claim(store, "k1", "third") == KeyRecord("d1", None)
    await store.finish("acme", "k1", "first", outcome)
    assert await claim(store, "k1", "fourth") == KeyRecord("d1", outcome)
    # Another owner's key of the same name is its own.
    assert (
        await store.claim("globex", "k1", "d2", "x", ttl_seconds=HOUR, lease_seconds=HOUR) is None
    )


async def test_a_stream_outcome_keeps_its_events_in_order(store: IdempotencyStore) -> None:
    assert await claim(store, "k2", "first") is None
    events = [{"type": "response.created", "sequence_number": n} for n in range(3)]
    await store.finish("acme", "k2", "first", IdempotentOutcome(events=events))
    found = await claim(store, "k2", "again")
    assert found is not None
    assert found.outcome is not None
    assert list(found.outcome.events or []) == events
    assert found.outcome.body is None


async def test_a_released_key_runs_anew(store: IdempotencyStore) -> None:
    assert await claim(store, "k3", "first") is None
    await store.release("acme", "k3", "other")  # not its claim
    assert await claim(store, "k3", "second") is not None
    await store.release("acme", "k3", "first")
    assert await claim(store, "k3", "second") is None


async def test_a_lapsed_lease_is_taken_over_by_the_same_request_only(
    store: IdempotencyStore,
) -> None:
    assert await claim(store, "k4", "dead", lease=0) is None
    # Another body is refused even though the holder is gone.
    assert await claim(store, "k4", "other", digest="d2") == KeyRecord("d1", None)
    assert await claim(store, "k4", "heir") is None
    await store.finish("acme", "k4", "dead", IdempotentOutcome(body={"late": True}))
    assert await claim(store, "k4", "next") == KeyRecord("d1", None)  # the heir's, unfinished


async def test_an_expired_key_is_new_and_swept(store: IdempotencyStore) -> None:
    assert await claim(store, "k5", "first", ttl=0) is None
    await store.finish("acme", "k5", "first", IdempotentOutcome(body={"id": "old"}))
    assert await claim(store, "k5", "second", digest="d2", ttl=0) is None
    assert await store.delete_expired() >= 1
    assert await claim(store, "k5", "third", digest="d3") is None
