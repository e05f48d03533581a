"""Background Responses and background review through the LiteLLM proxy.

`just demo/test-background-gateway` (or `uv run pytest tests/live/test_background_gateway.py`).
Without DEMO_GATEWAY_URL the session starts the API, a worker and LiteLLM itself.
"""

from __future__ import annotations

import pytest

from .suite_background import BackgroundSuite
from .targets import Target

pytestmark = [pytest.mark.live, pytest.mark.timeout(900, func_only=True)]


class TestBackgroundThroughLiteLLM(BackgroundSuite):
    @pytest.fixture
    def target(self, litellm_target: Target) -> Target:
        return litellm_target
