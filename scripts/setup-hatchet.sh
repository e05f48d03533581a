#!/usr/bin/env bash
# Builds the Hatchet engine's three commands (hatchet-lite, hatchet-admin, hatchet-migrate) from
# its Go module, at the release compose's hatchet-lite image pins, into
# .cache/hatchet/<version>/bin. Skipped when that folder already holds this release's build.
#
# The release version is linked in: a plain build reports v0.1.0-alpha.0, which LGOS's engine
# version guard refuses. The build runs inside the downloaded module (its own go.mod and go.sum
# pin every dependency), because `go install <pkg>@<tag>` also asks the proxy for the module's
# version list, which the proxy refuses here.
#
# Where Go is absent it says so and succeeds: the Hatchet tests then skip with that reason.
set -euo pipefail
cd "$(dirname "$0")/.."

# Keep in step with compose.yaml's hatchet-lite image tag (a test checks that they agree).
# Idempotency keys need v0.101.27 or newer; newer releases are refused by the Go module proxy.
HATCHET_VERSION="${HATCHET_VERSION:-v0.105.0}"
MODULE=github.com/hatchet-dev/hatchet
COMMANDS=(hatchet-lite hatchet-admin hatchet-migrate)
bin_dir=".cache/hatchet/$HATCHET_VERSION/bin"

if ! command -v go >/dev/null 2>&1; then
    echo "setup-hatchet: Go is not installed; the Hatchet engine is not built and its tests skip"
    exit 0
fi

built() {
    local command
    for command in "${COMMANDS[@]}"; do
        [ -x "$bin_dir/$command" ] || return 1
    done
    [ "$("$bin_dir/hatchet-lite" --version 2>/dev/null)" = "$HATCHET_VERSION" ]
}

if built; then
    exit 0
fi

echo "setup-hatchet: building Hatchet $HATCHET_VERSION from $MODULE (first time only; several minutes)"
started=$SECONDS
# The module's own go.mod asks for a toolchain; never download another one behind our back.
export GOTOOLCHAIN=local
# With -json, go reports a failed download in the JSON it prints (its "Error" field), not on stderr.
module_json=$(go mod download -json "$MODULE@$HATCHET_VERSION") || {
    echo "setup-hatchet: go mod download $MODULE@$HATCHET_VERSION failed:" >&2
    printf '%s\n' "$module_json" >&2
    exit 1
}
module_dir=$(printf '%s\n' "$module_json" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
[ -d "$module_dir" ] || {
    echo "setup-hatchet: go mod download gave no module folder: $module_json" >&2
    exit 1
}

staging="$bin_dir.partial"
rm -rf "$staging"
mkdir -p "$staging"
staging_abs=$(cd "$staging" && pwd)
packages=()
for command in "${COMMANDS[@]}"; do
    packages+=("./cmd/$command")
done
(
    cd "$module_dir"
    go build -trimpath -ldflags "-X main.Version=$HATCHET_VERSION" -o "$staging_abs/" "${packages[@]}"
)
rm -rf "$bin_dir"
mv "$staging" "$bin_dir"
built || {
    echo "setup-hatchet: the build in $bin_dir does not report $HATCHET_VERSION" >&2
    exit 1
}
echo "setup-hatchet: built Hatchet $HATCHET_VERSION in $bin_dir ($((SECONDS - started)) s)"
