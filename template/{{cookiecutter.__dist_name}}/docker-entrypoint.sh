#!/bin/sh
# Entry point of the image: loads the Hatchet client token the compose file's `hatchet-token`
# job wrote to a shared volume (a token given in the environment wins), then runs the command.
set -eu

token_file="${HATCHET_TOKEN_FILE:-/run/hatchet/token.env}"
if [ -z "${HATCHET_CLIENT_TOKEN:-}" ] && [ -r "$token_file" ]; then
    set -a
    . "$token_file"
    set +a
fi
exec "$@"
