#!/usr/bin/env bash
# Installs what the browser, gateway and frontend tests need beyond the project's own
# environment. Idempotent: each step skips itself when its result is already there.
set -euo pipefail
cd "$(dirname "$0")/.."

if ! command -v chromium >/dev/null 2>&1; then
    echo "installing Debian Chromium for the browser tests"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null
fi

# The gateway and the two chat UIs run in environments of their own (their pins never touch
# the library's lockfile); each script skips itself when its environment is up to date.
bash demo/litellm/setup.sh
bash demo/chainlit/setup.sh
bash demo/openwebui/setup.sh
