"""A fresh PostgreSQL database per test module (or per test), dropped afterwards.

The server at 127.0.0.1:5432 always runs here and in CI; these tests never skip.
`LGOS_TEST_POSTGRES_URI` points them at another server (it names the admin database).
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import psycopg
import pytest
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

ADMIN_URI = os.environ.get(
    "LGOS_TEST_POSTGRES_URI", "postgresql://postgres@127.0.0.1:5432/postgres"
)


def create_database() -> tuple[str, str]:
    """Create an empty database; return its name and connection URI."""
    name = f"lgos_test_{uuid.uuid4().hex[:16]}"
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


@pytest.fixture(scope="module")
def module_database() -> Iterator[str]:
    name, uri = create_database()
    try:
        yield uri
    finally:
        drop_database(name)


@pytest.fixture
def database() -> Iterator[str]:
    name, uri = create_database()
    try:
        yield uri
    finally:
        drop_database(name)
