"""Stored Responses and Conversations in PostgreSQL, on the server's pool.

Tables (created by `lgos.integrations.postgres.migrations`): `lgos_responses` (one JSON record
per Response), `lgos_deleted_responses` (ids deleted before their background run ended),
`lgos_conversations`, `lgos_conversation_items` (ordered by a sequence), `lgos_threads` (when
each kept LangGraph thread was last used) and the shared `lgos_response_events` log. Every
replica reads and writes the same rows, so any API process answers for any stored id.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from psycopg.rows import tuple_row
from psycopg.types.json import Jsonb
from pydantic import TypeAdapter

from lgos.core.stored import Order, StoredConversation, StoredResponse
from lgos.integrations.postgres.events import PostgresResponseEventLog, append_statement

# The record's JSON column, written and read back as the Pydantic model it once was did: the
# same keys, records of earlier versions missing a field get its default.
_RECORD: TypeAdapter[StoredResponse] = TypeAdapter(StoredResponse)


# A record inserted or replaced, unless its id was deleted (a background run that ends after a
# delete stays deleted).
_PUT_RECORD = (
    "INSERT INTO lgos_responses (id, owner_scope, created_at, record) "
    "SELECT %(id)s, %(owner_scope)s, %(created_at)s, %(record)s WHERE NOT EXISTS "
    "(SELECT 1 FROM lgos_deleted_responses WHERE id = %(id)s) "
    "ON CONFLICT (id) DO UPDATE SET record = excluded.record"
)


def _record_parameters(record: StoredResponse) -> dict[str, Any]:
    return {
        "id": record.id,
        "owner_scope": record.owner_scope,
        "created_at": record.created_at,
        "record": Jsonb(_RECORD.dump_python(record, mode="json")),
    }


class PostgresResponseStore:
    def __init__(self, pool: Any, events: PostgresResponseEventLog | None = None) -> None:
        self.pool = pool
        # The server passes the log its engine shares (`open_postgres`), so that a poll can
        # read a record and its run's last event in one statement (`get_response_and_last`).
        self._events = events if events is not None else PostgresResponseEventLog(pool)

    @property
    def events(self) -> PostgresResponseEventLog:
        return self._events

    async def _fetch(self, query: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        async with self.pool.connection() as conn, conn.cursor(row_factory=tuple_row) as cur:
            await cur.execute(query, params)
            return list(await cur.fetchall())

    async def _execute(self, query: str, params: Sequence[Any] | Mapping[str, Any]) -> int:
        async with self.pool.connection() as conn, conn.cursor() as cur:
            await cur.execute(query, params)
            return int(cur.rowcount)

    async def put_response(self, record: StoredResponse) -> None:
        await self._execute(_PUT_RECORD, _record_parameters(record))

    async def put_response_and_log(
        self, record: StoredResponse, log_key: str, events: Sequence[Mapping[str, Any]]
    ) -> None:
        # One statement: the record's insert runs as a common table expression of the append.
        statement, parameters = append_statement(
            log_key, events, before=f"record AS ({_PUT_RECORD} RETURNING 1), "
        )
        await self._execute(statement, {**parameters, **_record_parameters(record)})

    async def get_response(self, response_id: str, owner_scope: str) -> StoredResponse | None:
        rows = await self._fetch(
            "SELECT record FROM lgos_responses WHERE id = %s AND owner_scope = %s",
            (response_id, owner_scope),
        )
        return _RECORD.validate_python(rows[0][0]) if rows else None

    async def get_response_and_last(
        self, response_id: str, owner_scope: str, log_key: str
    ) -> tuple[StoredResponse | None, Mapping[str, Any] | None]:
        # One statement, one snapshot: the event is read only in the row of the owner's
        # record, so it is never returned to anyone else.
        rows = await self._fetch(
            "SELECT r.record, (SELECT e.event FROM lgos_response_events e "
            "WHERE e.run_id = %s ORDER BY e.sequence_number DESC LIMIT 1) "
            "FROM lgos_responses r WHERE r.id = %s AND r.owner_scope = %s",
            (log_key, response_id, owner_scope),
        )
        if not rows:
            return None, None
        record, last = rows[0]
        return _RECORD.validate_python(record), None if last is None else dict(last)

    async def delete_response(self, response_id: str, owner_scope: str) -> bool:
        async with self.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            await cur.execute(
                "DELETE FROM lgos_responses WHERE id = %s AND owner_scope = %s",
                (response_id, owner_scope),
            )
            if cur.rowcount == 0:
                return False
            await cur.execute(
                "INSERT INTO lgos_deleted_responses (id, deleted_at) VALUES (%s, %s) "
                "ON CONFLICT DO NOTHING",
                (response_id, int(time.time())),
            )
            await cur.execute("DELETE FROM lgos_response_events WHERE run_id = %s", (response_id,))
        return True

    async def is_deleted(self, response_id: str) -> bool:
        rows = await self._fetch(
            "SELECT 1 FROM lgos_deleted_responses WHERE id = %s", (response_id,)
        )
        return bool(rows)

    async def put_conversation(self, conversation: StoredConversation) -> None:
        await self._execute(
            "INSERT INTO lgos_conversations (id, owner_scope, updated_at, record) "
            "VALUES (%s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET "
            "updated_at = excluded.updated_at, record = excluded.record",
            (
                conversation.id,
                conversation.owner_scope,
                conversation.updated_at,
                Jsonb(conversation.model_dump(mode="json")),
            ),
        )

    async def get_conversation(
        self, conversation_id: str, owner_scope: str
    ) -> StoredConversation | None:
        rows = await self._fetch(
            "SELECT record FROM lgos_conversations WHERE id = %s AND owner_scope = %s",
            (conversation_id, owner_scope),
        )
        return StoredConversation.model_validate(rows[0][0]) if rows else None

    async def delete_conversation(self, conversation_id: str, owner_scope: str) -> bool:
        async with self.pool.connection() as conn, conn.transaction(), conn.cursor() as cur:
            await cur.execute(
                "DELETE FROM lgos_conversations WHERE id = %s AND owner_scope = %s",
                (conversation_id, owner_scope),
            )
            if cur.rowcount == 0:
                return False
            await cur.execute(
                "DELETE FROM lgos_conversation_items WHERE conversation_id = %s",
                (conversation_id,),
            )
        return True

    async def add_items(self, conversation_id: str, items: Sequence[Mapping[str, Any]]) -> None:
        if not items:
            return
        async with self.pool.connection() as conn, conn.cursor() as cur:
            await cur.executemany(
                "INSERT INTO lgos_conversation_items (conversation_id, item_id, item) "
                "VALUES (%s, %s, %s)",
                [(conversation_id, str(item["id"]), Jsonb(item)) for item in items],
            )

    async def list_items(
        self, conversation_id: str, *, after: str | None, limit: int, order: Order
    ) -> tuple[list[Mapping[str, Any]], bool]:
        direction, compare = ("ASC", ">") if order == "asc" else ("DESC", "<")
        where = "conversation_id = %s"
        params: list[Any] = [conversation_id]
        if after is not None:
            position = await self._fetch(
                "SELECT position FROM lgos_conversation_items "
                "WHERE conversation_id = %s AND item_id = %s",
                (conversation_id, after),
            )
            if not position:
                return [], False
            where += f" AND position {compare} %s"
            params.append(position[0][0])
        rows = await self._fetch(
            f"SELECT item FROM lgos_conversation_items WHERE {where} "
            f"ORDER BY position {direction} LIMIT %s",
            (*params, limit + 1),
        )
        return [row[0] for row in rows[:limit]], len(rows) > limit

    async def all_items(self, conversation_id: str) -> list[Mapping[str, Any]]:
        rows = await self._fetch(
            "SELECT item FROM lgos_conversation_items WHERE conversation_id = %s ORDER BY position",
            (conversation_id,),
        )
        return [row[0] for row in rows]

    async def get_item(self, conversation_id: str, item_id: str) -> Mapping[str, Any] | None:
        rows = await self._fetch(
            "SELECT item FROM lgos_conversation_items WHERE conversation_id = %s AND item_id = %s",
            (conversation_id, item_id),
        )
        return rows[0][0] if rows else None

    async def delete_item(self, conversation_id: str, item_id: str) -> bool:
        deleted = await self._execute(
            "DELETE FROM lgos_conversation_items WHERE conversation_id = %s AND item_id = %s",
            (conversation_id, item_id),
        )
        return deleted > 0

    async def touch_thread(self, thread_id: str) -> None:
        await self._execute(
            "INSERT INTO lgos_threads (thread_id, used_at) VALUES (%s, %s) "
            "ON CONFLICT (thread_id) DO UPDATE SET used_at = excluded.used_at",
            (thread_id, int(time.time())),
        )

    async def forget_thread(self, thread_id: str) -> None:
        await self._execute("DELETE FROM lgos_threads WHERE thread_id = %s", (thread_id,))

    async def expire(self, cutoff: int, limit: int) -> tuple[int, list[str]]:
        old = await self._fetch(
            "DELETE FROM lgos_responses WHERE id IN (SELECT id FROM lgos_responses "
            "WHERE created_at < %s ORDER BY created_at LIMIT %s) "
            "RETURNING id, record->>'events_key'",
            (cutoff, limit),
        )
        await self._events.delete([str(row[1] or row[0]) for row in old])
        await self._execute("DELETE FROM lgos_deleted_responses WHERE deleted_at < %s", (cutoff,))
        conversations = await self._fetch(
            "DELETE FROM lgos_conversations WHERE id IN (SELECT id FROM lgos_conversations "
            "WHERE updated_at < %s ORDER BY updated_at LIMIT %s) RETURNING id",
            (cutoff, limit),
        )
        if conversations:
            await self._execute(
                "DELETE FROM lgos_conversation_items WHERE conversation_id = ANY(%s)",
                ([str(row[0]) for row in conversations],),
            )
        threads = await self._fetch(
            "SELECT thread_id FROM lgos_threads WHERE used_at < %s ORDER BY used_at LIMIT %s",
            (cutoff, limit),
        )
        return len(old) + len(conversations), [str(row[0]) for row in threads]
