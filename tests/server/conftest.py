"""Fixtures for the server tests: a throwaway PostgreSQL database."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.postgres import temporary_database


@pytest.fixture
def postgres_uri() -> Iterator[str]:
    """A fresh database on the real server, dropped afterwards."""
    with temporary_database() as uri:
        yield uri
