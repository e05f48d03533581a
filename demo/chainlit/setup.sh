#!/usr/bin/env bash
# Create (or refresh) the Chainlit app's own environment, demo/chainlit/.venv, from its
# pinned requirements.txt. Idempotent; run it from anywhere.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../setup-venv.sh" chainlit chainlit
