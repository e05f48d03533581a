"""Each end user of the gateway is an owner of their own in LGOS, and no client can name
another (demo/litellm/lgos_owner.py, docs/security.md "The reference stack").

The UIs name their signed-in user to LiteLLM (`x-litellm-end-user-id`, or Open WebUI's
`X-OpenWebUI-User-Id`); the hook passes LiteLLM's end user to LGOS in `x-lgos-user` and removes
any copy a client sent, in each place LiteLLM would pass one upstream: a forwarded `x-*`
header, the body's `extra_headers`, `provider_specific_header.extra_headers`. The local stack
runs LGOS as compose and `just demo/api` do (the gateway's key, and that header).
`uv run pytest tests/live/test_litellm_users.py`.
"""

from __future__ import annotations

import uuid
from typing import Any

import httpx2
import pytest

from tests.support.stack_auth import USER_HEADER

from .targets import Target

pytestmark = [pytest.mark.live, pytest.mark.timeout(900, func_only=True)]


def as_user(target: Target, header: str, user: str) -> httpx2.Client:
    """The gateway as a UI's server calls it for one signed-in user."""
    return httpx2.Client(
        base_url=target.base_url,
        headers={"Authorization": f"Bearer {target.api_key}", header: user},
        timeout=60,
    )


def stored(http: httpx2.Client, **extra: Any) -> str:
    body = {"model": "simple-graph", "input": "a secret", "store": True, **extra}
    created = http.post("/responses", json=body)
    assert created.status_code == 200, created.text
    return str(created.json()["id"])


def test_each_end_user_reaches_only_their_own_responses(litellm_target: Target) -> None:
    alice, bob = (f"{name}-{uuid.uuid4().hex[:8]}" for name in ("alice", "bob"))
    # One user from Chainlit's header, the other from Open WebUI's (user_header_mappings).
    with (
        as_user(litellm_target, "x-litellm-end-user-id", alice) as as_alice,
        as_user(litellm_target, "X-OpenWebUI-User-Id", bob) as as_bob,
    ):
        mine = stored(as_alice)
        assert as_alice.get(f"/responses/{mine}").status_code == 200
        assert as_alice.get(f"/responses/{mine}/input_items").status_code == 200
        # Bob with Alice's id, and with a forged owner header besides: refused alike.
        for headers in ({}, {USER_HEADER: alice}):
            assert as_bob.get(f"/responses/{mine}", headers=headers).status_code == 404
            items = as_bob.get(f"/responses/{mine}/input_items", headers=headers)
            assert items.status_code == 404
            assert as_bob.delete(f"/responses/{mine}", headers=headers).status_code == 404
        assert as_alice.get(f"/responses/{mine}").status_code == 200


# Where a client could put an owner header for LiteLLM to pass upstream: (headers, body).
FORGERIES = {
    "header": lambda victim: ({USER_HEADER: victim}, {}),
    "extra_headers": lambda victim: ({}, {"extra_headers": {"X-Lgos-User": victim}}),
    "provider_specific_header": lambda victim: (
        {},
        {
            "provider_specific_header": {
                "custom_llm_provider": "openai",
                "extra_headers": {USER_HEADER: victim},
            }
        },
    ),
}


@pytest.mark.parametrize("forgery", FORGERIES)
def test_no_client_names_another_owner(litellm_target: Target, forgery: str) -> None:
    """What Bob creates while naming Alice as the owner stays Bob's: the hook removed his
    copy of the header, wherever he put it."""
    alice, bob = (f"{name}-{uuid.uuid4().hex[:8]}" for name in ("alice", "bob"))
    headers, body = FORGERIES[forgery](alice)
    with (
        as_user(litellm_target, "x-litellm-end-user-id", alice) as as_alice,
        as_user(litellm_target, "x-litellm-end-user-id", bob) as as_bob,
    ):
        body = {"model": "simple-graph", "input": "planted", "store": True, **body}
        created = as_bob.post("/responses", json=body, headers=headers)
        assert created.status_code == 200, created.text
        planted = created.json()["id"]
        assert as_bob.get(f"/responses/{planted}").status_code == 200
        assert as_alice.get(f"/responses/{planted}").status_code == 404
