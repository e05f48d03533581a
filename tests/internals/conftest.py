"""A fresh PostgreSQL database per test that asks for one, dropped afterwards."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.postgres import temporary_database


@pytest.fixture
def database() -> Iterator[str]:
    with temporary_database() as uri:
        yield uri
