"""Fixtures for the server tests: a throwaway PostgreSQL database."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest

ADMIN_URI = os.environ.get(
    "LGOS_TEST_POSTGRES_ADMIN_URI", "postgresql://postgres@127.0.0.1:5432/postgres"
)


@pytest.fixture
def postgres_uri() -> Iterator[str]:
    """A fresh database on the real server, dropped afterwards."""
    import psycopg

    name = f"lgos_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(ADMIN_URI, autocommit=True) as admin:
        admin.execute(f'CREATE DATABASE "{name}"')
    base, _, _ = ADMIN_URI.rpartition("/")
    try:
        yield f"{base}/{name}"
    finally:
        with psycopg.connect(ADMIN_URI, autocommit=True) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
