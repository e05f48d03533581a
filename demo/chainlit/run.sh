#!/usr/bin/env bash
# Start the Chainlit demo app on 127.0.0.1:$PORT (default 8001).
#
# Environment (all optional):
#   LGOS_BASE_URL / OPENAI_BASE_URL  OpenAI base URL of the LGOS API or gateway (default http://127.0.0.1:8000/v1)
#   LGOS_API_KEY / OPENAI_API_KEY    key for a gateway (LGOS itself needs none)
#   DATABASE_URL                     Chainlit's PostgreSQL (default: this checkout's, the database
#                                    `just demo/chainlit` uses, lgos_demo_<checkout>_chainlit on
#                                    127.0.0.1:5432; set it to "" to run without persistence)
#   CHAINLIT_AUTH_SECRET             session signing secret; generated into .auth_secret (gitignored) when unset
#   LGOS_CHAINLIT_USERS              the mock login's users, name:password,... (default demo:demo,guest:guest)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
"$here/setup.sh"
# Named per checkout as demo/justfile names it (the first 8 hex digits of the SHA-256 of the
# demo folder's path, or DEMO_DB), so two checkouts on one machine never share threads or reviews.
checkout="$(printf '%s' "$(cd "$here/.." && pwd)" | sha256sum | cut -c1-8)"
db_name="${DEMO_DB:-lgos_demo_$checkout}_chainlit"
export DATABASE_URL="${DATABASE_URL-postgresql://postgres@127.0.0.1:5432/$db_name}"
if [[ -n "$DATABASE_URL" ]]; then
    "$here/.venv/bin/python" "$here/setup_db.py" "$DATABASE_URL"
else
    unset DATABASE_URL
fi
if [[ -z "${CHAINLIT_AUTH_SECRET:-}" ]]; then
    # Generated once per checkout into a gitignored file, so logins survive a restart and no
    # secret is ever committed.
    secret_file="$here/.auth_secret"
    if [[ ! -s "$secret_file" ]]; then
        (umask 077 && "$here/.venv/bin/python" -c 'import secrets; print(secrets.token_urlsafe(48))' > "$secret_file")
    fi
    CHAINLIT_AUTH_SECRET="$(cat "$secret_file")"
    export CHAINLIT_AUTH_SECRET
fi
cd "$here"
exec "$here/.venv/bin/chainlit" run app.py --headless --host 127.0.0.1 --port "${PORT:-8001}"
