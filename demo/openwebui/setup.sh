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

# A local wheel folder (OPENWEBUI_WHEELS, default /opt/wheels) may hold the CPU build of torch;
# uv does not look there by itself. Without it, PyPI's (CUDA) torch build is used.
wheels="${OPENWEBUI_WHEELS:-/opt/wheels}"
extra=()
if compgen -G "$wheels/torch-*.whl" >/dev/null; then
    extra=(--find-links "$wheels")
fi

start=$SECONDS
[[ -x "$venv/bin/python" ]] || uv venv --quiet --python 3.11 "$venv"
uv pip install --python "$venv/bin/python" "${extra[@]}" -r "$here/requirements.txt"
echo "$want" >"$stamp"
echo "openwebui: environment ready in $((SECONDS - start)) s ($venv)"
