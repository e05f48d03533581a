"""`Idempotency-Key`s of foreground creates in PostgreSQL (`lgos_idempotency_keys`, created by
`lgos.integrations.postgres.migrations`), so every API replica sees every claim.

A claim is one statement: insert the key, or take over an expired key or a lapsed lease of the
same request, atomically under the row's primary key; when no row comes back, someone else has
the key and a second read says who.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from psycopg.rows import tuple_row
from psycopg.types.json import Jsonb

from lgos.core.idempotency import IdempotentOutcome, KeyRecord


class PostgresIdempotencyStore:
    def __init__(self, pool: Any) -> None:
        self.pool = pool

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
        while True:
            async with self.pool.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
                await cur.execute(
                    "INSERT INTO lgos_idempotency_keys AS held "
                    "(owner_scope, key, request_digest, token, lease_until, expires_at) "
                    "VALUES (%s, %s, %s, %s, now() + make_interval(secs => %s), "
                    "now() + make_interval(secs => %s)) "
                    "ON CONFLICT (owner_scope, key) DO UPDATE SET "
                    "request_digest = excluded.request_digest, token = excluded.token, "
                    "lease_until = excluded.lease_until, expires_at = excluded.expires_at, "
                    "outcome = NULL "
                    "WHERE held.expires_at <= now() OR (held.outcome IS NULL "
                    "AND held.lease_until <= now() "
                    "AND held.request_digest = excluded.request_digest) "
                    "RETURNING 1",
                    (owner_scope, key, request_digest, token, lease_seconds, ttl_seconds),
                )
                if await cur.fetchone() is not None:
                    return None
                await cur.execute(
                    "SELECT request_digest, outcome FROM lgos_idempotency_keys "
                    "WHERE owner_scope = %s AND key = %s",
                    (owner_scope, key),
                )
                row = await cur.fetchone()
            if row is not None:
                return KeyRecord(row[0], _outcome(row[1]))
            # Released or deleted between the two statements: claim again.

    async def renew(self, owner_scope: str, key: str, token: str, lease_seconds: float) -> None:
        await self._execute(
            "UPDATE lgos_idempotency_keys SET lease_until = now() + make_interval(secs => %s) "
            "WHERE owner_scope = %s AND key = %s AND token = %s",
            (lease_seconds, owner_scope, key, token),
        )

    async def finish(
        self, owner_scope: str, key: str, token: str, outcome: IdempotentOutcome
    ) -> None:
        recorded = {"body": outcome.body, "events": outcome.events}
        await self._execute(
            "UPDATE lgos_idempotency_keys SET outcome = %s, token = NULL, lease_until = NULL "
            "WHERE owner_scope = %s AND key = %s AND token = %s",
            (Jsonb(recorded), owner_scope, key, token),
        )

    async def release(self, owner_scope: str, key: str, token: str) -> None:
        await self._execute(
            "DELETE FROM lgos_idempotency_keys WHERE owner_scope = %s AND key = %s AND token = %s",
            (owner_scope, key, token),
        )

    async def delete_expired(self) -> int:
        return await self._execute(
            "DELETE FROM lgos_idempotency_keys WHERE expires_at <= now()", ()
        )

    async def _execute(self, query: str, params: tuple[object, ...]) -> int:
        async with self.pool.connection() as conn, conn.cursor() as cur:
            await cur.execute(query, params)
            return int(cur.rowcount)


def _outcome(recorded: Mapping[str, Any] | None) -> IdempotentOutcome | None:
    if recorded is None:
        return None
    return IdempotentOutcome(body=recorded.get("body"), events=recorded.get("events"))
