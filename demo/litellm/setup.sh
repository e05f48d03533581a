#!/usr/bin/env bash
# Create (or refresh) the LiteLLM proxy's own environment, demo/litellm/.venv, from its
# pinned requirements.txt. Idempotent; run it from anywhere.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../setup-venv.sh" litellm litellm
