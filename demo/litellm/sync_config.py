"""Regenerate the model list of demo/litellm/config.yaml from a running LGOS API.

LiteLLM's /v1/models shows only id/object/created/owned_by, so the `lgos`
metadata of each model (description, features, tools, client settings) is
copied into the deployment's `model_info.lgos`, which LiteLLM serves unchanged
on /model/info. This script writes that copy; the live suite
(test_litellm.py::...test_model_metadata_reaches_the_client) fails when it drifts.

    uv run python demo/litellm/sync_config.py --api-url http://127.0.0.1:8000/v1
    uv run python demo/litellm/sync_config.py --api-url ... --check   # exit 1 on drift

Only the block between the BEGIN/END GENERATED MODELS markers is rewritten.
Metadata is written as JSON, which is valid YAML, so no YAML library is needed.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import httpx

CONFIG = Path(__file__).with_name("config.yaml")
BEGIN = "# BEGIN GENERATED MODELS (sync_config.py)"
END = "# END GENERATED MODELS"


def fetch_models(api_url: str) -> list[tuple[str, dict[str, object]]]:
    """(model id, lgos metadata of the model detail) for every model the API lists."""
    with httpx.Client(base_url=api_url.rstrip("/"), timeout=30) as http:
        listing = http.get("/models")
        listing.raise_for_status()
        models = []
        for entry in sorted(listing.json()["data"], key=lambda e: e["id"]):
            detail = http.get(f"/models/{entry['id']}")
            detail.raise_for_status()
            models.append((entry["id"], detail.json().get("lgos") or {}))
        return models


def render(models: list[tuple[str, dict[str, object]]]) -> str:
    lines = [BEGIN]
    for model_id, meta in models:
        lines += [
            f"  - model_name: {model_id}",
            "    litellm_params:",
            # openai/ is the one prefix that forwards /v1/responses natively.
            f"      model: openai/{model_id}",
            "      api_base: os.environ/LGOS_API_BASE_URL",
            "      api_key: os.environ/LGOS_API_KEY",
            "    model_info:",
            # Stable deployment id: LiteLLM embeds it in every Response id it returns.
            f"      id: lgos-{model_id}",
            f"      lgos: {json.dumps(meta, sort_keys=True)}",
        ]
    lines.append(END)
    return "\n".join(lines)


def replace_block(text: str, block: str) -> str:
    start = text.index(BEGIN)
    end = text.index(END) + len(END)
    return text[:start] + block + text[end:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api-url", default="http://127.0.0.1:8000/v1")
    parser.add_argument("--config", type=Path, default=CONFIG)
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    args = parser.parse_args()

    current = args.config.read_text()
    wanted = replace_block(current, render(fetch_models(args.api_url)))
    if args.check:
        if wanted != current:
            print(f"{args.config} is stale: run demo/litellm/sync_config.py", file=sys.stderr)
            return 1
        print(f"{args.config} is up to date")
        return 0
    args.config.write_text(wanted)
    print(f"wrote {args.config}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
