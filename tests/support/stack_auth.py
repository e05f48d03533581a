"""Who may reach what in the reference stack, as `just demo/api`, `just demo/litellm` and
compose.yaml set it up: the API takes only the gateway's key, and the gateway names the
signed-in user beside it (x-lgos-user, demo/litellm/lgos_owner.py). Development values, the
same as the recipes' defaults (docs/security.md, "The reference stack")."""

from __future__ import annotations

# What clients (the UIs' servers) use against the LiteLLM proxy.
LITELLM_DEV_KEY = "sk-lgos-dev-not-a-secret"
# The gateway's key for the API.
GATEWAY_LGOS_KEY = "sk-lgos-gateway-dev-not-a-secret"
# The header the gateway names the user in, and the API's settings that trust it.
USER_HEADER = "x-lgos-user"
API_AUTH = {
    "LGOS_API_KEYS": f"litellm={GATEWAY_LGOS_KEY}",
    "LGOS_SCOPE_HEADER": USER_HEADER,
    "LGOS_PUBLIC_MODELS": "true",
}
