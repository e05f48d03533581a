#!/usr/bin/env bash
# Create or refresh the environment of one demo piece (the gateway and the two chat UIs each
# have their own, so their pins never touch the library's lockfile):
#
#   demo/setup-venv.sh <folder under demo/> <its entry point> [a requirement to install first]
#
# Does nothing when <folder>/.venv already holds exactly what <folder>/requirements.txt asks
# for and still belongs to this checkout: the entry point's first line names the venv's own
# Python, so a venv copied or moved from another checkout (whose scripts point there) is made
# again instead of being reported "up to date" and failing to start.
set -euo pipefail

name="$1"
entry="$2"
first="${3:-}"
folder="$(cd "$(dirname "${BASH_SOURCE[0]}")/$name" && pwd)"
venv="$folder/.venv"
req="$folder/requirements.txt"
stamp="$venv/.requirements.sha256"

want="$(sha256sum "$req" | cut -d' ' -f1)"
if [[ -x "$venv/bin/$entry" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]] &&
    [[ "$(head -n 1 "$venv/bin/$entry")" == "#!$venv/bin/python"* ]]; then
    echo "$name: environment up to date ($venv)"
    exit 0
fi

start=$SECONDS
if [[ -d "$venv" && ! "$(head -n 1 "$venv/bin/$entry" 2>/dev/null)" == "#!$venv/bin/python"* ]]; then
    rm -rf "$venv"  # half made, or made for another folder
fi
# 3.11 is what the pins were tried with; --seed gives the venv its own pip for $first.
uv venv --quiet --seed --allow-existing --python 3.11 "$venv"
if [[ -n "$first" ]]; then
    # Through the environment's own pip, which honours the machine's pip configuration (uv
    # looks only at the index).
    "$venv/bin/python" -m pip install --quiet --disable-pip-version-check \
        "$(grep -E "^$first==" "$req")"
fi
uv pip install --quiet --python "$venv/bin/python" -r "$req"
echo "$want" >"$stamp"
echo "$name: environment ready in $((SECONDS - start)) s ($venv)"
