#!/usr/bin/env bash
# Start the LiteLLM proxy from its own venv (created by setup.sh) in front of
# an LGOS API. Every setting has a local default and can be overridden:
#   LGOS_API_BASE_URL   upstream LGOS API           (http://127.0.0.1:8000/v1)
#   LGOS_MCP_URL        upstream MCP endpoint       (the API's /mcp)
#   LGOS_A2A_URL        upstream A2A agents         (the API's /a2a)
#   LITELLM_HOST/PORT   where the proxy listens     (127.0.0.1:4000)
#   LITELLM_MASTER_KEY  client key for the proxy    (a fixed development value)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [[ ! -x "$here/.venv/bin/litellm" ]]; then
    echo "LiteLLM is not installed yet: run demo/litellm/setup.sh (or just demo/litellm-setup)" >&2
    exit 1
fi

export LGOS_API_BASE_URL="${LGOS_API_BASE_URL:-http://127.0.0.1:8000/v1}"
# The MCP endpoint beside it (LGOS_MCP_PATH on the API side).
export LGOS_MCP_URL="${LGOS_MCP_URL:-${LGOS_API_BASE_URL%/v1}/mcp}"
# The A2A agents beside it (LGOS_A2A_PATH on the API side). LiteLLM reads a whole value from
# the environment, never part of one, so each agent of the config gets its own variable:
# LGOS_A2A_SIMPLE_GRAPH_URL=$LGOS_A2A_URL/simple-graph, and so on.
export LGOS_A2A_URL="${LGOS_A2A_URL:-${LGOS_API_BASE_URL%/v1}/a2a}"
config="${LITELLM_CONFIG:-$here/config.yaml}"
for variable in $(grep -o 'os.environ/LGOS_A2A_[A-Z0-9_]*_URL' "$config" | sort -u); do
    variable="${variable#os.environ/}"
    model="${variable#LGOS_A2A_}"
    model="${model%_URL}"
    model="${model//_/-}"
    export "$variable=${!variable:-$LGOS_A2A_URL/${model,,}}"
done
# The gateway's key for LGOS (`just demo/api` gives the API LGOS_API_KEYS=litellm=<this>).
export LGOS_API_KEY="${LGOS_API_KEY:-sk-lgos-gateway-dev-not-a-secret}"
# Development default, deliberately not secret-looking; set your own anywhere
# the proxy is reachable by others.
export LITELLM_MASTER_KEY="${LITELLM_MASTER_KEY:-sk-lgos-dev-not-a-secret}"
# Use the price map bundled in the wheel instead of fetching it from the
# internet at start (that fetch retries for ~10 s when offline).
export LITELLM_LOCAL_MODEL_COST_MAP=True
# No database: virtual keys and spend logs need Prisma, which cannot install
# offline, and routing needs only the master key and this config.
unset DATABASE_URL
export LITELLM_TELEMETRY=False

exec "$here/.venv/bin/litellm" \
    --config "$config" \
    --host "${LITELLM_HOST:-127.0.0.1}" \
    --port "${LITELLM_PORT:-4000}" \
    "$@"
