"""Chat Completions, Responses and model metadata through the LiteLLM proxy.

`just demo/test-litellm` (or `uv run pytest tests/live/test_litellm.py`).
"""

from __future__ import annotations

import base64

import pytest

from .suite_api import ApiSuite
from .targets import Target, decode_litellm_id

pytestmark = [pytest.mark.live, pytest.mark.timeout(900, func_only=True)]


class TestApiThroughLiteLLM(ApiSuite):
    @pytest.fixture
    def target(self, litellm_target: Target) -> Target:
        return litellm_target


def test_litellm_ids_embed_the_lgos_id(litellm_target: Target) -> None:
    """The gateway's id names its deployment and carries the LGOS id inside."""
    response = litellm_target.sdk().responses.create(model="simple-graph", input="hi")
    raw = decode_litellm_id(response.id)
    assert raw != response.id
    assert raw.startswith("resp_")
    decoded = base64.b64decode(response.id.removeprefix("resp_")).decode()
    assert "model_id:lgos-simple-graph;" in decoded


def test_plain_models_list_has_no_lgos_metadata(litellm_target: Target) -> None:
    """Documents the gap the /model/info copy exists for (see docs/deployment/gateways.md)."""
    with litellm_target.http() as http:
        entries = http.get("/models").json()["data"]
    assert entries
    assert all("lgos" not in entry for entry in entries)


def test_usage_in_response_streams_passes_through(litellm_target: Target) -> None:
    """LGOS reports the graph's usage in every finished Response; LiteLLM keeps it, detail
    objects included, so streams through LiteLLM pass the strict SDK too. (LiteLLM put its own
    estimate, without the detail objects, where LGOS used to send `usage: null`.)"""
    client = litellm_target.sdk()
    with client.responses.stream(model="simple-graph", input="hi") as stream:
        final = stream.get_final_response()
    assert final.usage is not None
    assert final.usage.output_tokens > 0  # the demo's fake model counts words as tokens
    assert final.usage.input_tokens_details.cached_tokens == 0
    assert final.usage.output_tokens_details.reasoning_tokens == 0
