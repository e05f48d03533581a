"""What every fault test module shares: asyncio for the async tests, and a private PostgreSQL
cluster per module (tests/faults/cluster.py), which a test may stop, restart or cut off."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.faults.cluster import Cluster, available, private_cluster


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="module")
def cluster() -> Iterator[Cluster]:
    reason = available()
    if reason:
        pytest.skip(reason)
    with private_cluster() as started:
        yield started
