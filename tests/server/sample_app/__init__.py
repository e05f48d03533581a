"""A registry package served by `lgos serve` from `tests/server/` (its working directory), so
`sample_app` is imported as an operator's own package would be."""

from pathlib import Path

SAMPLE_DIR = Path(__file__).resolve().parents[1]
SAMPLE_REGISTRY = "sample_app.registry:create_registry"
