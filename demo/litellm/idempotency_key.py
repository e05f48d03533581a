"""A LiteLLM proxy hook that passes the client's Idempotency-Key header on to LGOS.

LiteLLM forwards only x-* client headers upstream (forward_client_headers_to_llm_api), so a
plain `Idempotency-Key` header, which the OpenAI SDKs and most HTTP clients send, would be
dropped and a retried background create could start a second run. The hook copies the header
into the request's `extra_headers`, which LiteLLM sends upstream as headers (the same path as
the body form `{"extra_headers": {"Idempotency-Key": ...}}`). Loaded by config.yaml
(`litellm_settings.callbacks`); runs inside the proxy, so it imports only LiteLLM.
"""

from __future__ import annotations

from typing import Any

from litellm.integrations.custom_logger import CustomLogger

HEADER = "idempotency-key"


class ForwardIdempotencyKey(CustomLogger):
    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: str
    ) -> dict[str, Any]:
        headers = (data.get("proxy_server_request") or {}).get("headers") or {}
        key = next((value for name, value in headers.items() if name.lower() == HEADER), None)
        if key:
            extra = dict(data.get("extra_headers") or {})
            # A key the client also put in the body wins: it is the same request's own choice.
            if not any(name.lower() == HEADER for name in extra):
                extra["Idempotency-Key"] = key
            data["extra_headers"] = extra
        return data


forward_idempotency_key = ForwardIdempotencyKey()
