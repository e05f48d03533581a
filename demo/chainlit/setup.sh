#!/usr/bin/env bash
# Create or refresh the Chainlit app's own environment in demo/chainlit/.venv.
# Idempotent: skips the install when requirements.txt has not changed since the last run.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"
if [[ -x "$venv/bin/chainlit" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "chainlit environment up to date"
    exit 0
fi
[[ -x "$venv/bin/python" ]] || uv venv --quiet --python 3.11 "$venv"
uv pip install --quiet --python "$venv/bin/python" -r "$here/requirements.txt"
echo "$want" > "$stamp"
echo "chainlit environment ready: $venv"
