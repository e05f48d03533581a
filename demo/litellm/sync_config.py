"""Regenerate the model list and the A2A agents of demo/litellm/config.yaml from a running
LGOS API.

LiteLLM's /v1/models shows only id/object/created/owned_by, so the `lgos`
metadata of each model (description, features, tools, client settings) is
copied into the deployment's `model_info.lgos`, which LiteLLM serves unchanged
on /model/info. This script writes that copy; the live suite
(test_litellm.py::...test_model_metadata_reaches_the_client) fails when it drifts.

    uv run python demo/litellm/sync_config.py            # starts a throwaway `lgos serve`
    uv run python demo/litellm/sync_config.py --api-url http://127.0.0.1:8000/v1
    uv run python demo/litellm/sync_config.py --check    # exit 1 on drift

The A2A agents (`agents:`) are the API's agent cards (/a2a/<model>/.well-known/agent-card.json),
each at the URL in LGOS_A2A_<MODEL>_URL: LiteLLM takes a whole value from the environment,
never part of one, so run.sh makes one variable per agent from LGOS_A2A_URL.

Only the blocks between the BEGIN/END GENERATED markers are rewritten. Metadata is written as
JSON, which is valid YAML, so no YAML library is needed.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx

CONFIG = Path(__file__).with_name("config.yaml")
BEGIN = "# BEGIN GENERATED MODELS (sync_config.py)"
END = "# END GENERATED MODELS"
BEGIN_AGENTS = "# BEGIN GENERATED AGENTS (sync_config.py)"
END_AGENTS = "# END GENERATED AGENTS"
# What of an LGOS agent card the gateway needs to list and reach the agent (A2A 0.3 names,
# which LiteLLM 1.110 keeps in its registry); the URL is set per deployment.
CARD_FIELDS = ("name", "description", "version", "capabilities", "skills")


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


def fetch_cards(api_url: str, models: list[str]) -> list[dict[str, object]]:
    """The agent card of every model, as LGOS serves it beside the API."""
    root = api_url.rstrip("/").removesuffix("/v1")
    with httpx.Client(base_url=root, timeout=30) as http:
        cards = []
        for model in models:
            card = http.get(f"/a2a/{model}/.well-known/agent-card.json")
            card.raise_for_status()
            cards.append(card.json())
        return cards


def url_variable(model: str) -> str:
    """LGOS_A2A_<MODEL>_URL; run.sh reads the model back from the name."""
    return "LGOS_A2A_" + model.upper().replace("-", "_") + "_URL"


@contextlib.contextmanager
def throwaway_api() -> Iterator[str]:
    """`lgos serve demo.registry:create_registry` on a free loopback port, stopped on exit."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    lgos = Path(sys.executable).with_name("lgos")
    proc = subprocess.Popen(
        [str(lgos), "serve", "demo.registry:create_registry", "--port", str(port)],
        env={**os.environ, "LGOS_BACKGROUND": "memory", "LGOS_POSTGRES_URI": ""},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 120
        while True:
            if proc.poll() is not None:
                raise RuntimeError(
                    f"lgos serve exited: {proc.stderr.read().decode() if proc.stderr else ''}"
                )
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{url}/models", timeout=5).status_code == 200:
                    break
            if time.monotonic() > deadline:
                raise RuntimeError("lgos serve did not answer within 120 s")
            time.sleep(0.2)
        yield url
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        proc.wait(timeout=30)


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
        ]
        if "reasoning" in (meta.get("features") or ()):  # type: ignore[operator]
            # LiteLLM refuses `reasoning.effort` on /v1/responses for a model whose
            # model_info does not say it reasons (OpenAIResponsesAPIConfig
            # .map_openai_params_for_deployment, litellm 1.110): say so for graphs that do.
            lines.append("      supports_reasoning: true")
        lines.append(f"      lgos: {json.dumps(meta, sort_keys=True)}")
    lines.append(END)
    return "\n".join(lines)


def render_agents(cards: list[dict[str, object]]) -> str:
    lines = [BEGIN_AGENTS, "agents:"]
    for card in cards:
        params = {field: card[field] for field in CARD_FIELDS if field in card}
        params.update(
            {
                "url": "os.environ/" + url_variable(str(card["name"])),
                "protocolVersion": "0.3",
                "preferredTransport": "JSONRPC",
                "defaultInputModes": card.get("defaultInputModes", ["text/plain"]),
                "defaultOutputModes": card.get("defaultOutputModes", ["text/plain"]),
            }
        )
        lines += [
            f"  - agent_name: lgos-{card['name']}",
            f"    agent_card_params: {json.dumps(params, sort_keys=True)}",
            # The gateway's key for LGOS, sent as the bearer token of every A2A call.
            '    litellm_params: {"api_key": "os.environ/LGOS_API_KEY"}',
        ]
    lines.append(END_AGENTS)
    return "\n".join(lines)


def replace_block(text: str, block: str, begin: str = BEGIN, end_marker: str = END) -> str:
    start = text.index(begin)
    end = text.index(end_marker) + len(end_marker)
    return text[:start] + block + text[end:]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--api-url", help="a running LGOS API (default: start one)")
    parser.add_argument("--config", type=Path, default=CONFIG)
    parser.add_argument("--check", action="store_true", help="exit 1 if the file is stale")
    args = parser.parse_args()

    current = args.config.read_text()
    if args.api_url:
        models = fetch_models(args.api_url)
        cards = fetch_cards(args.api_url, [model for model, _ in models])
    else:
        with throwaway_api() as url:
            models = fetch_models(url)
            cards = fetch_cards(url, [model for model, _ in models])
    wanted = replace_block(current, render(models))
    wanted = replace_block(wanted, render_agents(cards), BEGIN_AGENTS, END_AGENTS)
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
