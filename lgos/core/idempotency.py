"""The contract of the store behind `Idempotency-Key` on foreground creates, and its in-memory
form.

A key is claimed by the first request that sends it (per owner scope); that request holds the
claim under a lease it renews while it runs, then finishes it with what it answered, or
releases it when it answered nothing (an error, or a stream its client left). A later request
with the same key finds the finished outcome, or a claim still held (and waits), or a lapsed
lease (its holder died: it takes the claim over). Background creates keep their engine's own
idempotency (`BackgroundJob.idempotency_key`).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol


@dataclass(frozen=True, slots=True)
class IdempotentOutcome:
    """What the first request answered: its JSON body, or every event of its stream in order."""

    body: Mapping[str, object] | None = None
    events: Sequence[Mapping[str, object]] | None = None


@dataclass(frozen=True, slots=True)
class KeyRecord:
    """A key someone else claimed: the digest of the request that claimed it, and its outcome
    (None while that request still runs)."""

    request_digest: str
    outcome: IdempotentOutcome | None


class IdempotencyStore(Protocol):
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
        """Claim `key` for the request named `token`: None when it now holds the claim (a new
        key, an expired one, or a lapsed lease of a request with the same digest), else the
        record of whoever has it. Atomic across every process sharing the store."""
        ...

    async def renew(self, owner_scope: str, key: str, token: str, lease_seconds: float) -> None:
        """Extend the lease of a claim `token` holds (nothing when it lost it)."""
        ...

    async def finish(
        self, owner_scope: str, key: str, token: str, outcome: IdempotentOutcome
    ) -> None:
        """Record the outcome of the claim `token` holds; the key answers with it until it
        expires."""
        ...

    async def release(self, owner_scope: str, key: str, token: str) -> None:
        """Forget the claim `token` holds: the next request with the key runs anew."""
        ...

    async def delete_expired(self) -> int:
        """Delete the keys past their time; how many."""
        ...


@dataclass(slots=True)
class _Entry:
    request_digest: str
    token: str | None
    expires_at: float
    lease_until: float = 0.0
    outcome: IdempotentOutcome | None = field(default=None)


# Past this many keys the oldest go first, so a long-running process does not grow without
# bound (the same bound as the in-memory Response store).
MAX_KEYS = 1_000


class InMemoryIdempotencyStore:
    """For one process: every request with a key reaches the same dict."""

    def __init__(self, max_keys: int = MAX_KEYS) -> None:
        self.max_keys = max_keys
        self._entries: dict[tuple[str, str], _Entry] = {}

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
        now = time.monotonic()
        entry = self._entries.get((owner_scope, key))
        if entry is not None and entry.expires_at <= now:
            entry = None
        if entry is not None and not (
            entry.outcome is None
            and entry.lease_until <= now
            and entry.request_digest == request_digest
        ):
            return KeyRecord(entry.request_digest, entry.outcome)
        self._entries.pop((owner_scope, key), None)  # a new key counts as the newest
        self._entries[(owner_scope, key)] = _Entry(
            request_digest, token, now + ttl_seconds, now + lease_seconds
        )
        while len(self._entries) > self.max_keys:
            del self._entries[next(iter(self._entries))]  # dicts keep insertion order
        return None

    def _held(self, owner_scope: str, key: str, token: str) -> _Entry | None:
        entry = self._entries.get((owner_scope, key))
        return entry if entry is not None and entry.token == token else None

    async def renew(self, owner_scope: str, key: str, token: str, lease_seconds: float) -> None:
        entry = self._held(owner_scope, key, token)
        if entry is not None:
            entry.lease_until = time.monotonic() + lease_seconds

    async def finish(
        self, owner_scope: str, key: str, token: str, outcome: IdempotentOutcome
    ) -> None:
        entry = self._held(owner_scope, key, token)
        if entry is not None:
            entry.outcome = outcome
            entry.token = None

    async def release(self, owner_scope: str, key: str, token: str) -> None:
        if self._held(owner_scope, key, token) is not None:
            del self._entries[(owner_scope, key)]

    async def delete_expired(self) -> int:
        now = time.monotonic()
        expired = [name for name, entry in self._entries.items() if entry.expires_at <= now]
        for name in expired:
            del self._entries[name]
        return len(expired)
