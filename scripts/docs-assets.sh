#!/usr/bin/env bash
# Put the documentation's one third-party script, Mermaid, next to the pages, so the built
# site draws its diagrams without the internet (Material for MkDocs otherwise loads it from a
# CDN when a page has a diagram). Fetched from the npm registry, pinned, by `just setup`: the
# docs build itself only checks that it is there (`--check`), so building the site never
# reaches a registry. The file is not committed (docs/assets/vendor/ is gitignored). Does
# nothing when the pinned file is there.
set -euo pipefail
version="11.17.2"  # the major version Material for MkDocs is written for (mermaid@11)
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$here/docs/assets/vendor"
stamp="$dest/mermaid.version"
if [[ -f "$dest/mermaid.min.js" && -f "$stamp" && "$(cat "$stamp")" == "$version" ]]; then
    exit 0
fi
if [[ "${1:-}" == --check ]]; then
    echo "docs: Mermaid $version is not in docs/assets/vendor/: run just setup (or bash scripts/docs-assets.sh) once" >&2
    exit 1
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
(cd "$work" && npm pack --silent "mermaid@$version" >/dev/null)
tar -xzf "$work"/mermaid-*.tgz -C "$work" package/dist/mermaid.min.js
mkdir -p "$dest"
mv "$work/package/dist/mermaid.min.js" "$dest/mermaid.min.js"
echo "$version" > "$stamp"
echo "docs: Mermaid $version in docs/assets/vendor/"
