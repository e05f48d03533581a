"""Install the LGOS Pipe function and the LGOS models into a running Open WebUI.

    python demo/openwebui/sync.py --url http://127.0.0.1:8080 --lgos-url http://127.0.0.1:8000/v1

Everything goes through Open WebUI's HTTP API, so nothing is clicked by hand, and running it
again updates what it installed (it is idempotent):

1. reads the models LGOS advertises (``GET /v1/models`` and ``/v1/models/{id}``);
2. writes one optional user valve per graph setting into the Pipe source (so a user can change
   ``delay_seconds`` or ``audience`` in the chat's Controls panel) and creates or updates the
   function ``lgos``, makes it active and sets its valves (LGOS base URL and key);
3. creates or updates one workspace model per graph (``lgos.<model>``) carrying the graph's
   description and its starter prompts (demo/starters.json), visible to every user, and
   removes the ones whose graph is gone;
4. marks the signed-in admin as having seen this version's "What's New" notes, so the first
   page is the chat, not a changelog modal.

Only the standard library is used, so any Python 3.11 runs it (the lgos environment, Open
WebUI's environment, or a bare interpreter).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

FUNCTION_ID = "lgos"  # Open WebUI names the models "<function id>.<LGOS model id>"
# The "Answer now" button under the messages of graphs that ask for reviews: the Pipe's own
# file installed a second time, without its Pipe class, so Open WebUI loads it as an Action.
ACTION_ID = "lgos_review"
PIPE_SOURCE = Path(__file__).with_name("lgos_pipe.py")
STARTERS = Path(__file__).parents[1] / "starters.json"
# The Pipe source marks where the per-graph setting valves go.
SETTINGS_BLOCK = re.compile(r"( *)# lgos-settings: begin\n.*?# lgos-settings: end\n", re.S)
# Marks the workspace models this command owns, so that it only ever deletes its own.
OWNER_MARK = "lgos_sync"
JSON_TYPES = {"boolean": "bool", "integer": "int", "number": "float", "string": "str"}


class ApiError(RuntimeError):
    pass


def call(
    method: str, url: str, body: Any = None, token: str | None = None, timeout: float = 30
) -> Any:
    """One JSON request; raises ApiError with the server's answer on an HTTP error."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url, data=data, method=method)
    request.add_header("Accept", "application/json")
    if data is not None:
        request.add_header("Content-Type", "application/json")
    if token:
        request.add_header("Authorization", f"Bearer {token}")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            text = response.read().decode()
    except urllib.error.HTTPError as exc:
        raise ApiError(f"{method} {url} -> {exc.code}: {exc.read().decode()[:500]}") from exc
    return json.loads(text) if text else None


def wait_until_up(url: str, deadline_seconds: float) -> None:
    """Wait for Open WebUI's /health (it takes a while to start)."""
    deadline = time.monotonic() + deadline_seconds
    while True:
        try:
            call("GET", f"{url}/health", timeout=5)
            return
        except (OSError, ApiError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.5)


def sign_in(url: str, email: str, password: str) -> str:
    """An admin token. With WEBUI_AUTH=false, empty credentials sign in the single user."""
    return call("POST", f"{url}/api/v1/auths/signin", {"email": email, "password": password})[
        "token"
    ]


def lgos_models(lgos_url: str, lgos_key: str) -> list[dict[str, Any]]:
    """The models LGOS advertises, each with its detail (which adds client_settings).

    Behind the LiteLLM gateway the details lack the `lgos` object; the gateway keeps a copy in
    each deployment's `model_info.lgos`, served on /model/info, which fills the gap.
    """
    token = lgos_key or None
    listed = call("GET", f"{lgos_url}/models", token=token)["data"]
    details = [call("GET", f"{lgos_url}/models/{m['id']}", token=token) for m in listed]
    if any("lgos" not in detail for detail in details):
        try:
            entries = call("GET", f"{lgos_url}/model/info", token=token)["data"]
        except (ApiError, KeyError, TypeError):
            entries = []
        gateway = {e["model_name"]: (e.get("model_info") or {}).get("lgos") for e in entries}
        for detail in details:
            if "lgos" not in detail and gateway.get(detail["id"]) is not None:
                detail["lgos"] = gateway[detail["id"]]
    return details


def is_litellm(lgos_url: str, lgos_key: str) -> bool:
    """Whether the URL is a LiteLLM proxy (it serves /model/info; LGOS does not)."""
    try:
        call("GET", f"{lgos_url}/model/info", token=lgos_key or None, timeout=10)
    except (ApiError, OSError, ValueError):
        return False
    return True


def settings_fields(models: list[dict[str, Any]]) -> str:
    """Python source of one optional UserValves field per distinct graph setting."""
    fields: dict[str, dict[str, Any]] = {}
    for model in models:
        client_settings = (model.get("lgos") or {}).get("client_settings") or {}
        properties = (client_settings.get("json_schema") or {}).get("properties") or {}
        defaults = client_settings.get("defaults") or {}
        for key, schema in properties.items():
            if not key.isidentifier() or key == "run_in_background":
                continue
            field = fields.setdefault(key, {"schema": schema, "used_by": []})
            field["used_by"].append(f"{model['id']} (default {defaults.get(key)!r})")
    lines = []
    for key, field in sorted(fields.items()):
        schema = field["schema"]
        py_type = JSON_TYPES.get(schema.get("type", "string"), "str")
        if py_type in ("int", "float"):
            # Open WebUI draws a number valve as a text box and refuses a typo with a bare
            # "Error updating function user valves", then runs with the old value. Kept as
            # typed, the Pipe names the value and its range on the next message instead.
            py_type = f"{py_type} | str"
        # Open WebUI shows the field's title above this text, so the title is not repeated.
        parts = [schema["description"].rstrip(". ")] if schema.get("description") else []
        if "minimum" in schema and "maximum" in schema:
            parts.append(f"Allowed: {schema['minimum']} to {schema['maximum']}")
        elif "minimum" in schema or "maximum" in schema:
            bound = schema.get("minimum", schema.get("maximum"))
            parts.append(f"Allowed: {bound} {'or more' if 'minimum' in schema else 'at most'}")
        parts.append("Default: the graph's own")
        parts.append(f"Used by {', '.join(field['used_by'])}")
        description = ". ".join(parts) + "."
        # No bounds on the valve itself: Open WebUI would refuse to save an out-of-range value
        # with a bare "Error updating function user valves". LGOS refuses it on the next run
        # with its own message, which the Pipe shows next to the allowed values.
        extra = ""
        if schema.get("enum"):
            # A top-level `enum` makes Open WebUI draw a select with exactly these values.
            extra = f", json_schema_extra={{'enum': {list(schema['enum'])!r}}}"
        lines.append(
            f"{key}: {py_type} | None = Field(default=None{extra}, description={description!r})"
        )
    return "\n".join(lines)


def render_pipe(models: list[dict[str, Any]]) -> str:
    """The Pipe source with the settings block filled in for these models."""
    source = PIPE_SOURCE.read_text()
    fields = settings_fields(models)

    def fill(match: re.Match[str]) -> str:
        indent = match.group(1)
        body = "".join(f"{indent}{line}\n" for line in fields.splitlines())
        return f"{indent}# lgos-settings: begin\n{body}{indent}# lgos-settings: end\n"

    rendered, count = SETTINGS_BLOCK.subn(fill, source)
    if count != 1:
        raise SystemExit(f"{PIPE_SOURCE.name}: settings block markers not found")
    return rendered


def render_action() -> str:
    """The Pipe's file as an Action function: the same code, with the name `Pipe` removed
    (Open WebUI takes a module that has a Pipe for a Pipe)."""
    return (
        PIPE_SOURCE.read_text()
        + "\n\n# Installed as the Action function: no Pipe here.\ndel Pipe\n"
    )


def install_function(
    url: str,
    token: str,
    content: str,
    valves: dict[str, Any] | None,
    function_id: str = FUNCTION_ID,
    name: str = "LGOS graphs",
    description: str = "LangGraph graphs served by LGOS (Responses API)",
) -> None:
    form = {
        "id": function_id,
        "name": name,
        "content": content,
        "meta": {"description": description},
    }
    try:
        existing = call("GET", f"{url}/api/v1/functions/id/{function_id}", token=token)
    except ApiError:
        existing = None
    if existing is None:
        call("POST", f"{url}/api/v1/functions/create", form, token)
        existing = call("GET", f"{url}/api/v1/functions/id/{function_id}", token=token)
    elif existing.get("content") != content:
        call("POST", f"{url}/api/v1/functions/id/{function_id}/update", form, token)
    # New functions start inactive; toggle flips the state, so only call it when needed.
    if not existing.get("is_active"):
        call("POST", f"{url}/api/v1/functions/id/{function_id}/toggle", token=token)
    if valves is not None:
        call("POST", f"{url}/api/v1/functions/id/{function_id}/valves/update", valves, token)


def load_starters() -> dict[str, list[dict[str, str]]]:
    try:
        data: dict[str, list[dict[str, str]]] = json.loads(STARTERS.read_text())
    except (OSError, ValueError):
        return {}
    return data


def capabilities(features: list[str]) -> dict[str, bool]:
    """What Open WebUI offers in a chat with a graph, from the features it declares.

    Images need `file_upload` too (Open WebUI uploads them before it sends them); a graph that
    takes images but not files then refuses an attached PDF with LGOS's own message. Files go
    to the graph as files (the Pipe reads them from Open WebUI's storage): `file_context` off
    keeps Open WebUI from also pasting their extracted text into the prompt, and
    `builtin_tools` off from adding `<attached_files>` tags to the user's message.
    """
    images, files = "image_input" in features, "file_input" in features
    return {
        "vision": images,
        "file_upload": images or files,
        "file_context": False,
        "builtin_tools": False,
        "citations": True,
    }


def install_models(
    url: str, token: str, models: list[dict[str, Any]], function_id: str = FUNCTION_ID
) -> list[str]:
    """One workspace model per graph, readable by every user; stale ones removed."""
    installed = []
    starters = load_starters()
    for model in models:
        lgos = model.get("lgos") or {}
        features = ", ".join(lgos.get("features") or []) or "chat"
        reviews = "interrupts" in (lgos.get("features") or [])
        description = (
            lgos.get("description") or "LGOS graph without metadata (limited functionality)."
        )
        form = {
            "id": f"{function_id}.{model['id']}",
            "base_model_id": None,
            "name": f"LGOS: {model['id']}" + ("" if lgos else " (limited functionality)"),
            "meta": {
                "description": f"{description} [{features}]",
                OWNER_MARK: True,
                "capabilities": capabilities(lgos.get("features") or []),
                # "Answer now" under the messages of graphs that pause for a review.
                "actionIds": [ACTION_ID] if reviews else [],
                # The prompts offered on an empty chat with this model.
                "suggestion_prompts": [
                    {"title": [entry["label"], entry["message"]], "content": entry["message"]}
                    for entry in starters.get(model["id"], [])
                ]
                or None,
            },
            "params": {},
            "access_grants": [
                {"principal_type": "user", "principal_id": "*", "permission": "read"}
            ],
            "is_active": True,
        }
        try:
            call("GET", f"{url}/api/v1/models/model?id={form['id']}", token=token)
            call("POST", f"{url}/api/v1/models/model/update", form, token)
        except ApiError:
            call("POST", f"{url}/api/v1/models/create", form, token)
        installed.append(form["id"])
    workspace = call("GET", f"{url}/api/v1/models/export", token=token) or []
    for model in workspace:
        mine = (model.get("meta") or {}).get(OWNER_MARK) and model["id"].startswith(
            function_id + "."
        )
        if mine and model["id"] not in installed:
            call("POST", f"{url}/api/v1/models/model/delete", {"id": model["id"]}, token)
    return installed


def skip_whats_new(url: str, token: str) -> None:
    """Record that the admin has seen this version's changelog, so it does not pop up."""
    version = call("GET", f"{url}/api/config", token=token).get("version")
    current = call("GET", f"{url}/api/v1/users/user/settings", token=token) or {}
    ui = {**(current.get("ui") or {}), "version": version}
    call("POST", f"{url}/api/v1/users/user/settings/update", {**current, "ui": ui}, token)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--url", default="http://127.0.0.1:8080", help="Open WebUI base URL")
    parser.add_argument(
        "--lgos-url",
        default="http://127.0.0.1:8000/v1",
        help="LGOS (or LiteLLM gateway) base URL as Open WebUI reaches it",
    )
    parser.add_argument("--lgos-key", default="", help="API key for --lgos-url")
    parser.add_argument(
        "--catalog-url",
        default=None,
        help="where this command reads the models (default: --lgos-url, which behind LiteLLM "
        "also reads the gateway's /model/info)",
    )
    parser.add_argument(
        "--function-id",
        default=FUNCTION_ID,
        help="id of the Open WebUI function (a second id installs a second connection)",
    )
    parser.add_argument("--email", default="", help="admin email (empty with WEBUI_AUTH=false)")
    parser.add_argument("--password", default="", help="admin password")
    parser.add_argument("--wait", type=float, default=120, help="seconds to wait for Open WebUI")
    parser.add_argument("--poll-interval", type=float, default=1.0, help="background poll interval")
    parser.add_argument(
        "--upstream-name",
        default=None,
        help="what --lgos-url is, in outage messages (default: the LiteLLM gateway when it "
        "answers /model/info, else LGOS)",
    )
    parser.add_argument(
        "--upstream-start", default="", help="the command that starts --lgos-url when it is down"
    )
    parser.add_argument(
        "--lgos-start",
        default="",
        help="when --lgos-url is a gateway: the command that starts LGOS behind it, named when "
        "the gateway cannot reach it",
    )
    parser.add_argument(
        "--worker-start",
        default="just demo/worker",
        help="the command that starts a background worker, named when no worker takes a run",
    )
    args = parser.parse_args(argv)

    url = args.url.rstrip("/")
    lgos_url = args.lgos_url.rstrip("/")
    wait_until_up(url, args.wait)
    token = sign_in(url, args.email, args.password)
    models = lgos_models((args.catalog_url or lgos_url).rstrip("/"), args.lgos_key)
    upstream = args.upstream_name or (
        "the LiteLLM gateway" if is_litellm(lgos_url, args.lgos_key) else "LGOS"
    )
    install_function(
        url,
        token,
        render_pipe(models),
        {
            "base_url": lgos_url,
            "api_key": args.lgos_key,
            "poll_interval_seconds": args.poll_interval,
            "upstream_name": upstream,
            "upstream_start": args.upstream_start,
            "lgos_start": args.lgos_start,
            "worker_start": args.worker_start,
        },
        args.function_id,
    )
    install_function(
        url,
        token,
        render_action(),
        None,
        ACTION_ID,
        name="Answer now",
        description="Opens the review card again for a review waiting in this chat",
    )
    installed = install_models(url, token, models, args.function_id)
    skip_whats_new(url, token)
    print(f"openwebui: function {args.function_id!r} active; models: {', '.join(installed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
