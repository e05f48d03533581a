"""A fresh PostgreSQL database per test module (or per test), dropped afterwards.

The server at 127.0.0.1:5432 always runs here and in CI; these tests never skip.
`LGOS_TEST_POSTGRES_URI` points them at another server (it names the admin database).
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.support.postgres import temporary_database


@pytest.fixture(scope="module")
def module_database() -> Iterator[str]:
    with temporary_database() as uri:
        yield uri


@pytest.fixture
def database() -> Iterator[str]:
    with temporary_database() as uri:
        yield uri
