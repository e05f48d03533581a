#!/bin/sh
# Entry point of the API/worker image.
#
# 1. Loads the Hatchet client token that the one-shot `hatchet-token` job of
#    compose.yaml wrote to a shared volume, so nobody has to copy a token by
#    hand. A token given in the environment wins.
# 2. Wraps the command in OpenTelemetry auto-instrumentation when an OTLP
#    endpoint is configured (the `otel` profile sets one).
set -eu

token_file="${HATCHET_TOKEN_FILE:-/run/hatchet/token.env}"
if [ -z "${HATCHET_CLIENT_TOKEN:-}" ] && [ -r "$token_file" ]; then
    set -a
    . "$token_file"
    set +a
fi

if [ -n "${OTEL_EXPORTER_OTLP_ENDPOINT:-}" ]; then
    exec opentelemetry-instrument "$@"
fi
exec "$@"
