# LGOS developer commands. `just --list` shows them; the demo stack lives in demo/justfile
# (`just demo/<recipe>`).

set shell := ["bash", "-euo", "pipefail", "-c"]

[private]
default:
    @just --list

# Serve the demo registry on the embedded default (in-memory everything) at 127.0.0.1:8000.
serve *args:
    uv run lgos serve demo.registry:create_registry {{ args }}

# Install everything the whole test suite uses (idempotent; a fresh machine needs it once).
# PostgreSQL, the Python environment, the browser and UI environments and the docs' assets, while
# the Hatchet engine builds in the background (scripts/setup.sh says how).
setup:
    bash scripts/setup.sh

# Run the whole test suite (contract, PostgreSQL, processes, gateway, browsers, compose): three pytest
# processes at once, each on its own folders (scripts/test.sh says why); naming a path or a test runs
# one pytest as asked.
test *args: setup
    bash scripts/test.sh {{ args }}

# Copy the screenshots the browser tests took (build/screenshots/) over the docs' pictures.
docs-images:
    #!/usr/bin/env bash
    set -euo pipefail
    shopt -s nullglob
    shots=(build/screenshots/*/*.png)
    if [ ${#shots[@]} -eq 0 ]; then
        echo "no screenshots in build/screenshots/: run the browser tests first" >&2
        exit 1
    fi
    for shot in "${shots[@]}"; do
        target="docs/img/${shot#build/screenshots/}"
        mkdir -p "$(dirname "$target")"
        cp "$shot" "$target"
        echo "$target"
    done

# Lint and format checks.
lint:
    uv run ruff check .
    uv run ruff format --check .

# Apply formatting and safe lint fixes.
format:
    uv run ruff format .
    uv run ruff check --fix .

# Type-check the library.
type-check:
    uv run mypy

# Everything CI checks besides the tests: lint, types, docs.
check: lint type-check docs

# Build the documentation site strictly (warnings fail); it works offline (Mermaid bundled by
# `just setup`: the build itself fetches nothing).
docs *args:
    bash scripts/docs-assets.sh --check
    NO_MKDOCS_2_WARNING=1 uv run mkdocs build --strict {{ args }}

# Benchmarks: LGOS against a bare graph and the reference product (`just bench --quick`).
bench *args:
    uv run --with-requirements benchmarks/requirements.txt python -m benchmarks.foreground {{ args }}

# The durable paths against their floors (engines alone, each engine running the graph itself,
# LangGraph's PostgreSQL saver alone): background create→completed and runs/s per engine, review
# round trips, stream tails. Writes durable.json, durable.md and img/durable.png under --out
# (default benchmarks/.results/). The full run takes about 9 minutes here, `--quick` about 4;
# the Hatchet engine comes from `just setup`.
bench-durable *args:
    uv run --with-requirements benchmarks/requirements.txt python -m benchmarks.durable {{ args }}

# Where a review round trip's CPU goes, LGOS beside LangGraph alone (benchmarks/durable/profile_review.py).
bench-profile-review *args:
    uv run --with-requirements benchmarks/requirements.txt --with py-spy python -m benchmarks.durable.profile_review {{ args }}

# Where a background burst's CPU goes, in the API and one worker (benchmarks/durable/profile_burst.py).
bench-profile-burst *args:
    uv run --with-requirements benchmarks/requirements.txt --with py-spy python -m benchmarks.durable.profile_burst {{ args }}

# Profile one benchmark target under load (see benchmarks/foreground/profile.py for the options).
bench-profile *args:
    uv run --with-requirements benchmarks/requirements.txt --with py-spy python -m benchmarks.foreground.profile {{ args }}

# Run llm-comply (both formats) against `lgos serve` and rewrite docs/conformance.md.
conformance:
    uv run python -m tests.conformance.llm_comply
