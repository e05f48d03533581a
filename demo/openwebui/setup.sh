#!/usr/bin/env bash
# Create (or refresh) Open WebUI's own environment, demo/openwebui/.venv, from its pinned
# requirements.txt. Idempotent; run it from anywhere.
#
# torch goes in first, through the environment's own pip: on a machine whose pip configuration
# points at a local CPU build of torch that build is used; elsewhere it is PyPI's.
exec bash "$(dirname "${BASH_SOURCE[0]}")/../setup-venv.sh" openwebui open-webui torch
