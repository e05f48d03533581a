"""The gateway suites through Bifrost, only when DEMO_BIFROST_URL points at one.

Bifrost cannot be installed on our machines (its npm package downloads the
binary at run time), so without DEMO_BIFROST_URL every test here is skipped.
Configure Bifrost with demo/bifrost/config.json; see docs/deployment/gateways.md.
"""

from __future__ import annotations

import pytest

from .suite_api import ApiSuite, lgos_metadata
from .suite_background import BackgroundSuite
from .targets import Target

pytestmark = [pytest.mark.live, pytest.mark.timeout(900, func_only=True)]


class TestApiThroughBifrost(ApiSuite):
    @pytest.fixture
    def target(self, bifrost_target: Target) -> Target:
        return bifrost_target

    @pytest.mark.xfail(
        strict=True, reason="Bifrost's normalized model list drops the lgos extension"
    )
    def test_model_metadata_reaches_the_client(self, target: Target) -> None:
        assert lgos_metadata(target, "background-interrupt") is not None


class TestBackgroundThroughBifrost(BackgroundSuite):
    @pytest.fixture
    def target(self, bifrost_target: Target) -> Target:
        return bifrost_target
