#!/usr/bin/env bash
# Create (or refresh) the LiteLLM proxy's own virtual environment.
# Idempotent: when the venv already holds exactly what requirements.txt asks
# for, it does nothing. Run it from anywhere: paths are relative to this file.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
req="$here/requirements.txt"
stamp="$venv/.requirements.sha256"

want="$(sha256sum "$req" | cut -d' ' -f1)"
if [[ -x "$venv/bin/litellm" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "litellm venv is up to date ($venv)"
    exit 0
fi

# The proxy does not need the Python of the main project; 3.11 is what was tried.
uv venv --quiet --allow-existing --python 3.11 "$venv"
uv pip install --quiet --python "$venv/bin/python" -r "$req"
echo "$want" >"$stamp"
echo "litellm venv ready: litellm $("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("litellm"))')"
