"""A LiteLLM proxy hook that tells LGOS which user a request is for, and nobody else can.

LGOS behind this gateway runs with the gateway's key and `LGOS_SCOPE_HEADER=x-lgos-user`: the
header names the user, and LGOS keeps each user's Responses, reviews and background runs apart
(docs/security.md, "The reference stack"). So the header must come from the gateway alone:

- LiteLLM decides who the end user is, from its documented sources (the `x-litellm-end-user-id`
  header the demo UIs send, `user_header_mappings`, the body's `user`); this hook sends that,
  and nothing when there is none (the request is then the gateway's own).
- A client's copy is removed from every place LiteLLM would send upstream: forwarded `x-*`
  headers (`forward_client_headers_to_llm_api`), the body's `extra_headers` and
  `provider_specific_header.extra_headers`.
- It runs on every call LiteLLM makes to LGOS: create, retrieve, cancel, delete, input items,
  chat. LiteLLM's own user-information headers (`add_user_information_to_llm_headers`) reach
  only creates and chats, so a background run's poll would lose its owner without this.

Loaded by config.yaml (`litellm_settings.callbacks`); runs inside the proxy, so it imports
only LiteLLM.
"""

from __future__ import annotations

from typing import Any

from litellm.integrations.custom_logger import CustomLogger

HEADER = "x-lgos-user"


def without_owner(headers: Any) -> Any:
    """`headers` without any spelling of HEADER (other values pass unchanged)."""
    if not isinstance(headers, dict):
        return headers
    return {name: value for name, value in headers.items() if name.lower() != HEADER}


class LgosOwner(CustomLogger):
    async def async_pre_call_hook(
        self, user_api_key_dict: Any, cache: Any, data: dict[str, Any], call_type: str
    ) -> dict[str, Any]:
        for field in ("headers", "extra_headers"):
            if field in data:
                data[field] = without_owner(data[field])
        provider_headers = data.get("provider_specific_header")
        if isinstance(provider_headers, dict) and "extra_headers" in provider_headers:
            provider_headers["extra_headers"] = without_owner(provider_headers["extra_headers"])
        end_user = getattr(user_api_key_dict, "end_user_id", None)
        if end_user:
            # `extra_headers` is what every Responses call (retrieve and cancel included)
            # sends upstream, and it wins over forwarded client headers.
            data["extra_headers"] = {**(data.get("extra_headers") or {}), HEADER: str(end_user)}
        return data


lgos_owner = LgosOwner()
