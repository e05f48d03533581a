"""What every fault test module shares: asyncio for the async tests, and a private PostgreSQL
cluster per module (tests/faults/cluster.py), which a test may stop, restart or cut off."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.background.conftest import Deployment, running
from tests.faults.cluster import Cluster, available, private_cluster

# Several processes importing LangGraph at once on a shared two-core machine: be patient.
START_SECONDS = 300.0


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


def engine_deployment(
    request: pytest.FixtureRequest, cluster: Cluster, **options: Any
) -> Iterator[Deployment]:
    """A deployment of the engine `request.param` names on the module's cluster (with the
    Hatchet engine's settings on Hatchet), started with the patience above, stopped after."""
    engine = str(request.param)
    extra = request.getfixturevalue("hatchet_engine") if engine == "hatchet" else None
    deployment = Deployment(
        engine, cluster.uri, extra_env=extra, start_timeout=START_SECONDS, **options
    )
    with running(deployment):
        yield deployment
