"""Retry-safe foreground creates: a request with an `Idempotency-Key` runs once per owner scope
and key, and every retry with the same body gets what the first one answered.

A retry that arrives while the first request still runs waits for it (a streamed retry, before
its stream starts), then replays its answer: the same JSON body, or the same stream events.
The same key with another body (or on another route) is a 409. What the first request did not
answer (an error, a stream its client left, which cancels the run) is not kept: the next
request with the key runs anew. Background creates keep their engine's idempotency
(`service.background`).
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from typing import Any

from lgos.core import log_fields
from lgos.core.background import digest
from lgos.core.errors import IdempotencyKeyReusedError
from lgos.core.idempotency import IdempotencyStore, IdempotentOutcome, InMemoryIdempotencyStore

logger = logging.getLogger("lgos.idempotency")

# How long a key answers with its first outcome (OpenAI's and Stripe's keys last 24 hours).
DEFAULT_TTL_SECONDS = 24 * 3600.0
# A claim's holder renews its lease every third of this; a lease that lapses (its process
# died) lets the next retry take the claim over instead of waiting for the TTL.
LEASE_SECONDS = 30.0
# A waiting retry looks again after this long, doubling up to the second figure.
FIRST_LOOK_SECONDS = 0.05
LONGEST_LOOK_SECONDS = 0.5

Body = Mapping[str, object]
# What a create answers: a JSON body, or the events of a stream.
Answer = Body | AsyncGenerator[Body]


# A create as its key compares it: the route's name (and path parameters) and the JSON body.
CreateRequest = tuple[str, Mapping[str, Any]]


def request_digest(request: CreateRequest) -> str:
    """The same request: the same route and the same JSON body, however its keys are ordered.
    `extra_headers` is where LiteLLM carries the key itself, not part of the request."""
    route, body = request
    canonical = {name: value for name, value in body.items() if name != "extra_headers"}
    return digest(route, json.dumps(canonical, sort_keys=True, separators=(",", ":")))


class Claim:
    """A key this request holds: renewed while it runs, then finished or released."""

    def __init__(self, store: IdempotencyStore, owner_scope: str, key: str, token: str) -> None:
        self.store = store
        self.owner_scope = owner_scope
        self.key = key
        self.token = token
        self._renewing = asyncio.create_task(self._renew())

    async def _renew(self) -> None:
        while True:
            await asyncio.sleep(LEASE_SECONDS / 3)
            try:
                await self.store.renew(self.owner_scope, self.key, self.token, LEASE_SECONDS)
            except Exception:
                logger.warning("idempotency.renew_failed", exc_info=True)

    async def finish(self, outcome: IdempotentOutcome) -> None:
        self._renewing.cancel()
        try:
            await self.store.finish(self.owner_scope, self.key, self.token, outcome)
        except Exception:
            # The client still gets its answer; the lease lapses and a retry runs anew.
            logger.warning("idempotency.finish_failed", exc_info=True)

    async def release(self) -> None:
        self._renewing.cancel()
        try:
            await asyncio.shield(self.store.release(self.owner_scope, self.key, self.token))
        except Exception:
            logger.warning("idempotency.release_failed", exc_info=True)


class Idempotency:
    """The keys of one server: `once` runs a create at most once per owner scope and key."""

    def __init__(
        self, store: IdempotencyStore | None = None, ttl_seconds: float = DEFAULT_TTL_SECONDS
    ) -> None:
        self.store = store if store is not None else InMemoryIdempotencyStore()
        self.ttl_seconds = ttl_seconds

    async def once(
        self,
        owner_scope: str,
        key: str | None,
        request: CreateRequest,
        produce: Callable[[], Awaitable[Answer]],
    ) -> Answer:
        """`produce()`'s answer, or, for a key used before with the same request, the answer
        the first request gave. Without a key, `produce()` and nothing else."""
        if key is None:
            return await produce()
        begun = await self._begin(owner_scope, key, request_digest(request))
        if isinstance(begun, IdempotentOutcome):
            log_fields.add(idempotent_replay=True)
            return _replayed(begun)
        try:
            answer = await produce()
        except BaseException:
            await begun.release()
            raise
        if isinstance(answer, Mapping):
            await begun.finish(IdempotentOutcome(body=answer))
            return answer
        return _recorded(begun, answer)

    async def _begin(self, owner_scope: str, key: str, request: str) -> Claim | IdempotentOutcome:
        token = uuid.uuid4().hex
        pause = FIRST_LOOK_SECONDS
        while True:
            found = await self.store.claim(
                owner_scope,
                key,
                request,
                token,
                ttl_seconds=self.ttl_seconds,
                lease_seconds=LEASE_SECONDS,
            )
            if found is None:
                return Claim(self.store, owner_scope, key, token)
            if found.request_digest != request:
                raise IdempotencyKeyReusedError()
            if found.outcome is not None:
                return found.outcome
            # The first request still runs (elsewhere, maybe): look again until it answered,
            # released the key, or its lease lapsed.
            await asyncio.sleep(pause)
            pause = min(pause * 2, LONGEST_LOOK_SECONDS)

    async def delete_expired(self) -> int:
        return await self.store.delete_expired()


def _replayed(outcome: IdempotentOutcome) -> Answer:
    if outcome.events is not None:
        return _replay(outcome.events)
    assert outcome.body is not None  # an outcome is a body or a stream
    return outcome.body


async def _replay(events: Sequence[Body]) -> AsyncGenerator[Body]:
    for event in events:
        yield event


async def _recorded(claim: Claim, events: AsyncGenerator[Body]) -> AsyncGenerator[Body]:
    """The stream as it is sent, kept whole once it ended; a stream cut short (its client
    left, and the run with it) releases the key."""
    sent: list[Body] = []
    ended = False
    try:
        async for event in events:
            sent.append(event)
            yield event
        ended = True
    finally:
        await events.aclose()
        if ended:
            await claim.finish(IdempotentOutcome(events=sent))
        else:
            await claim.release()
