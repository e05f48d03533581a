"""Throwaway databases on the real PostgreSQL server (127.0.0.1:5432 here and in CI)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import psycopg
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
