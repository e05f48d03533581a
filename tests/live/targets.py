"""What differs between talking to the LGOS API directly and through a gateway.

The suites are written once against a `Target`; each test module binds them to
one target (direct API, LiteLLM, Bifrost).
"""

from __future__ import annotations

import base64
import binascii
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import httpx2
from openai import OpenAI
from openai.types.responses import Response

TERMINAL = frozenset({"completed", "failed", "cancelled", "incomplete"})
POLL_TIMEOUT = 120.0


def decode_litellm_id(response_id: str) -> str:
    """The LGOS Response id inside a LiteLLM-encoded id (unchanged if not encoded).

    LiteLLM hands out "resp_" + base64("litellm:custom_llm_provider:openai;
    model_id:<deployment>;response_id:<backend id>") so it can route retrieve and
    cancel back to the deployment that created the Response.
    """
    if not response_id.startswith("resp_"):
        return response_id
    payload = response_id.removeprefix("resp_")
    try:
        text = base64.b64decode(payload + "=" * (-len(payload) % 4)).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return response_id
    if not text.startswith("litellm:"):
        return response_id
    fields = dict(part.split(":", 1) for part in text.split(";") if ":" in part)
    return fields.get("response_id", response_id)


@dataclass
class Target:
    """One way to reach the demo models."""

    name: str  # "direct", "litellm" or "bifrost"
    base_url: str  # ends with /v1
    api_key: str
    # Strict SDK validation where the gateway passes OpenAI shapes unchanged.
    strict: bool = True
    # LiteLLM re-encodes Response ids; compare decoded ids.
    encodes_ids: bool = False
    # Bifrost: provider for lifecycle calls (?provider=...) and model prefix.
    provider: str | None = None
    model_prefix: str = ""
    # Error bodies: LGOS's own envelope directly; gateways rewrite type/code.
    native_errors: bool = True
    # How this target carries an idempotency key: name -> request kwargs.
    idempotency_styles: dict[str, Callable[[str], dict[str, Any]]] = field(default_factory=dict)
    # The LGOS API behind the gateway, to compare metadata with (None: unknown).
    api_url: str | None = None
    # Log tails of locally started processes, for failure messages.
    diagnostics: Callable[[], str] = lambda: ""

    def sdk(self) -> OpenAI:
        """A new SDK client: no retries, so every status the server sends is seen."""
        return OpenAI(
            base_url=self.base_url,
            api_key=self.api_key,
            max_retries=0,
            timeout=60,
            _strict_response_validation=self.strict,
        )

    def model(self, name: str) -> str:
        return f"{self.model_prefix}{name}"

    def raw_id(self, response_id: str) -> str:
        return decode_litellm_id(response_id) if self.encodes_ids else response_id

    def lifecycle(self) -> dict[str, Any]:
        """Extra kwargs for retrieve/cancel (Bifrost picks the provider from the query)."""
        return {"extra_query": {"provider": self.provider}} if self.provider else {}

    def http(self) -> httpx2.Client:
        return httpx2.Client(
            base_url=self.base_url,
            headers={"Authorization": f"Bearer {self.api_key}"},
            timeout=60,
        )

    def poll(self, client: OpenAI, response_id: str, timeout: float = POLL_TIMEOUT) -> Response:
        """Retrieve until the Response is terminal; fail with the stack's logs after `timeout`."""
        deadline = time.monotonic() + timeout
        while True:
            response = client.responses.retrieve(response_id, **self.lifecycle())
            if response.status in TERMINAL:
                return response
            if time.monotonic() > deadline:
                raise AssertionError(
                    f"{response_id} still {response.status} after {timeout} s\n{self.diagnostics()}"
                )
            time.sleep(0.2)  # poll interval, not coordination: the loop waits for a condition


def direct_styles() -> dict[str, Callable[[str], dict[str, Any]]]:
    return {
        "Idempotency-Key": lambda k: {"extra_headers": {"Idempotency-Key": k}},
        "X-Idempotency-Key": lambda k: {"extra_headers": {"X-Idempotency-Key": k}},
    }


def litellm_styles() -> dict[str, Callable[[str], dict[str, Any]]]:
    # LiteLLM forwards only x-* client headers (forward_client_headers_to_llm_api)
    # and turns a body field `extra_headers` into upstream headers; the demo's
    # hook (demo/litellm/idempotency_key.py) passes a plain Idempotency-Key on.
    return {
        "Idempotency-Key": lambda k: {"extra_headers": {"Idempotency-Key": k}},
        "body extra_headers": lambda k: {"extra_body": {"extra_headers": {"Idempotency-Key": k}}},
        "X-Idempotency-Key": lambda k: {"extra_headers": {"X-Idempotency-Key": k}},
    }


def bifrost_styles() -> dict[str, Callable[[str], dict[str, Any]]]:
    # Bifrost forwards headers on client.header_filter_config.allowlist (the demo
    # config allows idempotency-key), and x-bf-eh-<name> as <name>.
    return {
        "Idempotency-Key": lambda k: {"extra_headers": {"Idempotency-Key": k}},
        "x-bf-eh-idempotency-key": lambda k: {"extra_headers": {"x-bf-eh-idempotency-key": k}},
    }
