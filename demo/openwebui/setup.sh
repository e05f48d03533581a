#!/usr/bin/env bash
# Create (or refresh) the isolated Open WebUI environment in demo/openwebui/.venv.
# Idempotent: does nothing when the environment already matches requirements.txt.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
venv="$here/.venv"
stamp="$venv/.requirements.sha256"
want="$(sha256sum "$here/requirements.txt" | cut -d' ' -f1)"

if [[ -x "$venv/bin/open-webui" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "openwebui: environment up to date ($venv)"
    exit 0
fi

start=$SECONDS
[[ -x "$venv/bin/python" ]] || uv venv --quiet --seed --python 3.11 "$venv"
# Torch first, through the environment's own pip: pip honours the machine's pip configuration,
# which may point at a local CPU build of torch (uv looks only at the index). Elsewhere this is
# PyPI's default build.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
    "$(grep -E "^torch==" "$here/requirements.txt")"
uv pip install --python "$venv/bin/python" -r "$here/requirements.txt"
echo "$want" >"$stamp"
echo "openwebui: environment ready in $((SECONDS - start)) s ($venv)"
