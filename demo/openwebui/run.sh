#!/usr/bin/env bash
# Start Open WebUI offline in front of LGOS (or the LiteLLM gateway).
#
#   demo/openwebui/run.sh                  # http://127.0.0.1:8080, LGOS at http://127.0.0.1:8000/v1
#   OPENWEBUI_PORT=3003 LGOS_BASE_URL=http://127.0.0.1:4000/v1 LGOS_API_KEY=sk-... demo/openwebui/run.sh
#
# Then install the LGOS Pipe function and models once it answers:
#   python demo/openwebui/sync.py --url http://127.0.0.1:8080
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/setup.sh" >&2

lgos_base_url="${LGOS_BASE_URL:-http://127.0.0.1:8000/v1}"
lgos_api_key="${LGOS_API_KEY:-sk-lgos-demo}"

# Everything Open WebUI writes (SQLite database, uploads, caches) stays in DATA_DIR.
export DATA_DIR="${OPENWEBUI_DATA_DIR:-$here/.data}"
mkdir -p "$DATA_DIR"
# A fixed key so sessions survive restarts; this is a local demo, not a deployment secret.
export WEBUI_SECRET_KEY="${WEBUI_SECRET_KEY:-lgos-openwebui-demo-only}"

# Offline: no model downloads from Hugging Face, no pip installs of Function requirements,
# no update check, no telemetry.
export OFFLINE_MODE=true HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
export ANONYMIZED_TELEMETRY=false DO_NOT_TRACK=true SCARF_NO_ANALYTICS=true
# No local embedding model either: retrieval is bypassed (this demo uploads no documents).
export RAG_EMBEDDING_ENGINE=openai BYPASS_EMBEDDING_AND_RETRIEVAL=true

# Every chat would otherwise send extra "task" requests (title, tags, follow-ups, autocomplete)
# to the selected model, and each one would run the graph again.
export ENABLE_TITLE_GENERATION=false ENABLE_TAGS_GENERATION=false
export ENABLE_FOLLOW_UP_GENERATION=false ENABLE_AUTOCOMPLETE_GENERATION=false

# Single user unless WEBUI_AUTH=true: the browser opens straight into the chat as an admin, and
# the sync command signs in with an empty email and password. With WEBUI_AUTH=true (what
# `just demo/openwebui` sets) people log in, WEBUI_ADMIN_EMAIL/PASSWORD create the admin on the
# first start, and each user's chats, reviews and runs are their own.
export WEBUI_AUTH="${WEBUI_AUTH:-false}"
# The signed-in user in X-OpenWebUI-User-Id on Open WebUI's own connections (the LGOS Pipe
# always sends it): the gateway passes it to LGOS as the owner (docs/security.md).
export ENABLE_FORWARD_USER_INFO_HEADERS=true

# LGOS's MCP endpoint as one of Open WebUI's tool servers (Admin Panel -> Settings -> External
# Tools): a model that calls tools sees every graph as one (docs/mcp-a2a.md). LGOS_MCP_URL
# names it (`just demo/openwebui` passes the API's); unset, Open WebUI has no tool server.
if [[ -n "${LGOS_MCP_URL:-}" ]]; then
    # LGOS_MCP_KEY: the API's key, when it takes none without one (`just demo/openwebui`).
    mcp_auth="none"
    [[ -n "${LGOS_MCP_KEY:-}" ]] && mcp_auth="bearer"
    # x-lgos-user: Open WebUI fills {{USER_ID}} with the signed-in user on every tool call, so a
    # tool call acts as the same owner as that user's chats through the gateway (the gateway
    # names them by the same id): one user's MCP tasks stay out of another's reach.
    export TOOL_SERVER_CONNECTIONS="[{\"type\": \"mcp\", \"url\": \"$LGOS_MCP_URL\", \"path\": \"\", \"auth_type\": \"$mcp_auth\", \"key\": \"${LGOS_MCP_KEY:-}\", \"headers\": {\"x-lgos-user\": \"{{USER_ID}}\"}, \"config\": {\"enable\": true}, \"info\": {\"id\": \"lgos\", \"name\": \"LGOS graphs\"}}]"
fi

# Read the settings from this environment on every start instead of freezing them in the
# database on the first one.
export ENABLE_PERSISTENT_CONFIG=false

# Open WebUI keeps its data in SQLite under DATA_DIR unless OPENWEBUI_DATABASE_URL says
# otherwise; a DATABASE_URL meant for another program (Chainlit's) must not redirect it.
if [[ -n "${OPENWEBUI_DATABASE_URL:-}" ]]; then
    export DATABASE_URL="$OPENWEBUI_DATABASE_URL"
else
    unset DATABASE_URL
fi

# A new chat opens on this model (the Pipe names its models "lgos.<graph>").
export DEFAULT_MODELS="${OPENWEBUI_DEFAULT_MODEL:-lgos.simple-graph}"

# Plain OpenAI connection to the same server: graphs without human review also work as
# ordinary models; the LGOS Pipe (installed by sync.py) adds background runs and review.
export ENABLE_OLLAMA_API=false
# Open WebUI's own OpenAI connection lists every graph a second time, without the Pipe: no
# background runs, no review card, no settings. Off, so every model in the list is a Pipe model
# ("LGOS: ..."); OPENWEBUI_PLAIN_CONNECTION=true brings the plain entries back.
export ENABLE_OPENAI_API="${OPENWEBUI_PLAIN_CONNECTION:-false}"
export OPENAI_API_BASE_URL="$lgos_base_url" OPENAI_API_KEY="$lgos_api_key"

# Enter while an answer is still running stops it and sends the new message, instead of
# holding the message in a queue until the answer ends. A review card keeps its answer running:
# a queued "approve" would be sent after the card was answered, as a new prompt. Sent at once,
# the LGOS Pipe finds the review waiting and the text answers it. (A user may turn the queue
# back on under Settings > Interface.)
export DEFAULT_INTERFACE_SETTINGS="${DEFAULT_INTERFACE_SETTINGS:-{\"enableMessageQueue\": false\}}"

# No generic suggestions ("fun fact about the Roman Empire"): each LGOS model brings its own
# starter prompts (demo/starters.json, installed by sync.py).
export DEFAULT_PROMPT_SUGGESTIONS="${DEFAULT_PROMPT_SUGGESTIONS:-[]}"

exec "$here/.venv/bin/open-webui" serve --host "${OPENWEBUI_HOST:-127.0.0.1}" --port "${OPENWEBUI_PORT:-8080}"
