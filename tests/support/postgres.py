"""Throwaway databases on the real PostgreSQL server (127.0.0.1:5432 here and in CI)."""

from __future__ import annotations

import collections
import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

ADMIN_URI = os.environ.get(
    "LGOS_TEST_POSTGRES_URI", "postgresql://postgres@127.0.0.1:5432/postgres"
)


def create_database(prefix: str = "lgos_test") -> tuple[str, str]:
    """Create an empty database; return its name and connection URI."""
    name = f"{prefix}_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(ADMIN_URI, autocommit=True) as conn:
        conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    params = conninfo_to_dict(ADMIN_URI)
    params["dbname"] = name
    return name, make_conninfo(**params)


def drop_database(name: str) -> None:
    with psycopg.connect(ADMIN_URI, autocommit=True) as conn:
        conn.execute(
            sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name))
        )


@contextmanager
def temporary_database(prefix: str = "lgos_test") -> Iterator[str]:
    """A fresh database for the block; yields its URI and drops it afterwards."""
    name, uri = create_database(prefix)
    try:
        yield uri
    finally:
        drop_database(name)


@contextmanager
def counted_statements(
    monkeypatch: pytest.MonkeyPatch, words: int = 3
) -> Iterator[collections.Counter[str]]:
    """The statements psycopg's async cursors send in the block, by their first `words`."""
    counts: collections.Counter[str] = collections.Counter()
    original = psycopg.AsyncCursor.execute

    async def execute(self: Any, query: Any, *args: Any, **kwargs: Any) -> Any:
        counts[" ".join(str(query).split()[:words])] += 1
        return await original(self, query, *args, **kwargs)

    with monkeypatch.context() as patched:
        patched.setattr(psycopg.AsyncCursor, "execute", execute)
        yield counts
