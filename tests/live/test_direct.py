"""The gateway suites straight against the LGOS API (no gateway in between).

`just demo/test-direct` (or `uv run pytest tests/live/test_direct.py`).
Without DEMO_API_URL the session starts the API (and a worker) itself.
"""

from __future__ import annotations

import pytest

from .suite_api import ApiSuite
from .suite_background import BackgroundSuite
from .targets import Target

pytestmark = [pytest.mark.live, pytest.mark.timeout(900, func_only=True)]


class TestApiDirect(ApiSuite):
    @pytest.fixture
    def target(self, direct_target: Target) -> Target:
        return direct_target


class TestBackgroundDirect(BackgroundSuite):
    @pytest.fixture
    def target(self, direct_target: Target) -> Target:
        return direct_target
