"""Chat Completions, Responses and model metadata through the LiteLLM proxy.

`just demo/test-litellm` (or `uv run pytest demo/tests_live/test_litellm.py`).
"""

from __future__ import annotations

import base64
import json

import pytest

from .suite_api import ApiSuite
from .targets import Target, decode_litellm_id

pytestmark = [pytest.mark.live, pytest.mark.timeout(900)]


class TestApiThroughLiteLLM(ApiSuite):
    @pytest.fixture
    def target(self, litellm_target: Target) -> Target:
        return litellm_target


def test_litellm_ids_embed_the_lgos_id(litellm_target: Target) -> None:
    """The gateway's id names its deployment and carries the LGOS id inside."""
    response = litellm_target.client().responses.create(model="simple-graph", input="hi")
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


def test_litellm_rewrites_usage_in_response_streams(litellm_target: Target) -> None:
    """Why streams through LiteLLM are read without strict validation.

    LGOS sends `usage: null` (fake models count no tokens); LiteLLM 1.108.7 puts
    its own estimate there without the input/output_tokens_details the OpenAI
    schema requires. When this test fails, LiteLLM stopped doing it: turn
    `strict_streams` back on for the LiteLLM target.
    """
    body = {"model": "simple-graph", "input": "hi", "stream": True}
    with litellm_target.http() as http, http.stream("POST", "/responses", json=body) as resp:
        completed = [
            json.loads(line.removeprefix("data: "))
            for line in resp.iter_lines()
            if line.startswith("data: ") and '"response.completed"' in line
        ]
    usage = completed[-1]["response"]["usage"]
    assert usage is not None
    assert "input_tokens_details" not in usage
