"""Install the LGOS Pipe function and the LGOS models into a running Open WebUI.

    python demo/openwebui/sync.py --url http://127.0.0.1:8080 --lgos-url http://127.0.0.1:8000/v1

Everything goes through Open WebUI's HTTP API, so nothing is clicked by hand, and running it
again updates what it installed (it is idempotent):

1. reads the models LGOS advertises (``GET /v1/models`` and ``/v1/models/{id}``);
2. creates or updates the function ``lgos``, makes it active and sets its valves (LGOS base URL
   and key);
3. creates or updates one workspace model per graph (``lgos.<model>``) carrying the graph's
   description, its starter prompts (demo/starters.json) and its settings, visible to every
   user, and removes the ones whose graph is gone. A graph's settings are Open WebUI *chat
   variables* that its model declares (see `settings_prompt`): the chat box's Chat Variables
   button shows that graph's settings only, numbers as number inputs with their bounds;
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
# Marks the workspace models this command owns, so that it only ever deletes its own.
OWNER_MARK = "lgos_sync"
# The lines around a graph's settings in its model's system prompt. Open WebUI sends that prompt
# to the Pipe as a system message, and the Pipe removes these lines (lgos_pipe.py has the same
# two markers): the graph never sees them.
SETTINGS_BEGIN = "[LGOS settings of this chat: read by the LGOS Pipe, never sent to the graph]"
SETTINGS_END = "[end of LGOS settings]"
# Open WebUI's rule for a chat variable's name; a setting named otherwise cannot be one.
CHAT_VARIABLE_KEY = re.compile(r"^[a-z][a-z0-9_]*$")


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


def settings_prompt(model: dict[str, Any]) -> str:
    """The system prompt that declares a graph's settings as Open WebUI chat variables.

    Open WebUI 0.12 reads `{{chat.variables.<key>|<type>:<attribute>=<value>...}}` in a
    model's system prompt and offers those variables, for that model only, in the dialog of the
    chat box's Chat Variables button: a number is an `<input type="number">` with its `min`
    and `max`, so the browser refuses an out-of-range value when it is saved and names the
    bound; an enum or a switch is a select. The values are the chat's (saved with it) and reach
    the Pipe as `__metadata__["chat_variables"]`. "" when the graph has no settings.
    """
    lgos = model.get("lgos") or {}
    client_settings = lgos.get("client_settings") or {}
    properties = (client_settings.get("json_schema") or {}).get("properties") or {}
    defaults = client_settings.get("defaults") or {}
    lines = []
    if "background" in (lgos.get("features") or []):
        # The graph's own choice is the default: on for graphs meant for long work.
        default = "on" if lgos.get("background_by_default") else "off"
        options = ["on", "off"]
        label = "Run in background (the run survives a closed tab; Stop cancels it)"
        lines.append(
            chat_variable("run_in_background", f"select:{_attrs(label, options, default)}")
        )
    for key, schema in properties.items():
        if key == "run_in_background" or not CHAT_VARIABLE_KEY.match(key):
            print(f"openwebui: {model['id']}: setting {key!r} cannot be a chat variable; skipped")
            continue
        definition = setting_definition(key, schema, defaults.get(key, schema.get("default")))
        if definition is None:
            print(f"openwebui: {model['id']}: setting {key!r} has no form field; skipped")
            continue
        lines.append(chat_variable(key, definition))
    if not lines:
        return ""
    return "\n".join([SETTINGS_BEGIN, *lines, SETTINGS_END])


def chat_variable(key: str, definition: str) -> str:
    return f"{key}: {{{{chat.variables.{key}|{definition}}}}}"


def setting_definition(key: str, schema: dict[str, Any], default: Any) -> str | None:
    """One setting as a chat variable's type and attributes, or None when no field fits."""
    title = str(schema.get("title") or key.replace("_", " ").title())
    kind = schema.get("type")
    if schema.get("enum"):
        options = [str(value) for value in schema["enum"]]
        if any("}" in option for option in options):
            return None
        return f"select:{_attrs(title, options, None if default is None else str(default))}"
    if kind == "boolean":
        shown = None if default is None else ("on" if default else "off")
        return f"select:{_attrs(title, ['on', 'off'], shown)}"
    if kind in ("integer", "number"):
        low, high = schema.get("minimum"), schema.get("maximum")
        bounds = (
            f" ({low} to {high})"
            if low is not None and high is not None
            else f" ({low} or more)"
            if low is not None
            else f" (at most {high})"
            if high is not None
            else ""
        )
        attrs = [f'label="{_plain(title + bounds)}"']
        attrs += [f"min={low}"] if low is not None else []
        attrs += [f"max={high}"] if high is not None else []
        attrs.append("step=1" if kind == "integer" else 'step="any"')
        if default is not None:
            attrs.append(f"default={default}")
            attrs.append(f'placeholder="the graph\'s default is {default}"')
        return "number:" + ":".join(attrs)
    if kind == "string":
        attrs = [f'label="{_plain(title)}"']
        if "maxLength" in schema:
            attrs.append(f"maxlength={schema['maxLength']}")
        if isinstance(default, str) and default and _plain(default) == default:
            attrs.append(f'default="{default}"')
        return "text:" + ":".join(attrs)
    return None  # arrays and objects: no form field fits


def _attrs(label: str, options: list[str], default: str | None) -> str:
    """A select's attributes: its label, its options (JSON) and its default."""
    attrs = [f'label="{_plain(label)}"', f"options={json.dumps(options)}"]
    if default is not None:
        attrs.append(f'default="{_plain(default)}"')
    return ":".join(attrs)


def _plain(text: str) -> str:
    """Text that fits between the quotes of a chat variable's attribute: Open WebUI ends the
    definition at the first `}` and does not unescape quotes."""
    return re.sub(r'["{}\n]', "", text)


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
        # The graph's settings, as chat variables this prompt declares (the Pipe removes it).
        system = settings_prompt(model)
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
            "params": {"system": system} if system else {},
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
        PIPE_SOURCE.read_text(),
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
