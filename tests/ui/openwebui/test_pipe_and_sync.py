"""The Pipe's request building and the sync command, without a browser.

The helpers are pure functions; the sync test talks to the real Open WebUI of the session.
"""

from __future__ import annotations

import contextlib
import http.server
import importlib.util
import json
import subprocess
import sys
import threading
import urllib.error
from pathlib import Path
from types import ModuleType
from typing import Any, ClassVar

import pytest
from owui_support import OPENWEBUI_DIR, http_json


def load(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, OPENWEBUI_DIR / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


pipe = load("lgos_pipe")
sync = load("sync")

SETTINGS = {
    "json_schema": {
        "type": "object",
        "properties": {
            "audience": {"type": "string", "enum": ["general", "expert"], "default": "general"},
            "delay_seconds": {"type": "integer", "minimum": 0, "maximum": 300, "default": 5},
        },
    },
    "defaults": {"audience": "general", "delay_seconds": 5},
}


def test_only_changed_settings_of_the_selected_graph_are_sent() -> None:
    values = {"audience": "general", "delay_seconds": 0, "words": 10, "enthusiastic": None}
    # audience equals its default; words belongs to another graph; None means "not set".
    assert pipe.changed_settings(values, SETTINGS) == {"delay_seconds": 0}
    assert pipe.changed_settings(values, None) == {}


def test_chat_history_becomes_responses_input() -> None:
    messages = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": [{"type": "text", "text": "Hi"}, {"type": "image_url"}]},
        {"role": "assistant", "content": "Hello"},
        {"role": "tool", "content": "ignored"},
    ]
    assert pipe.to_input(messages) == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello"},
    ]


def test_images_and_each_messages_files_become_input_parts() -> None:
    image = "data:image/png;base64,iVBORw0KGgo="
    pdf = {
        "type": "input_file",
        "filename": "a.pdf",
        "file_data": "data:application/pdf;base64,JQ==",
    }
    messages = [
        {"role": "user", "content": "Read this"},
        {"role": "assistant", "content": "Done"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "And this"},
                {"type": "image_url", "image_url": {"url": image, "detail": "low"}},
            ],
        },
    ]
    # Files go with the user message they were attached to (here: the first one).
    assert pipe.to_input(messages, [[pdf], []]) == [
        {"role": "user", "content": [{"type": "input_text", "text": "Read this"}, pdf]},
        {"role": "assistant", "content": "Done"},
        {
            "role": "user",
            "content": [
                {"type": "input_text", "text": "And this"},
                {"type": "input_image", "image_url": image, "detail": "low"},
            ],
        },
    ]


def test_sync_offers_uploads_only_to_graphs_that_take_them() -> None:
    text_only = sync.capabilities(["background"])
    assert not text_only["vision"]
    assert not text_only["file_upload"]
    images = sync.capabilities(["image_input"])
    # Open WebUI uploads an image before it sends it: vision alone would refuse it.
    assert images["vision"]
    assert images["file_upload"]
    both = sync.capabilities(["image_input", "file_input"])
    # The graph gets the file itself: no extracted text, no <attached_files> tags besides.
    assert not both["file_context"]
    assert not both["builtin_tools"]


def test_commentary_is_not_part_of_the_answer() -> None:
    def message(text: str, phase: str) -> dict[str, Any]:
        content = [{"type": "output_text", "text": text, "annotations": []}]
        return {"type": "message", "phase": phase, "content": content}

    review = {"type": "function_call", "name": "lgos_interrupt", "call_id": "c1", "arguments": "{}"}
    output = [message("Working", "commentary"), message("Done", "final_answer"), review]
    response = {"output": output}
    assert pipe.answer_texts(response) == ["Done"]
    assert pipe.interrupt_calls(response) == [review]


def test_sync_declares_each_graphs_settings_as_chat_variables_of_its_model() -> None:
    graph = {"client_settings": SETTINGS, "features": ["background"]}
    prompt = sync.settings_prompt({"id": "g", "lgos": {**graph, "background_by_default": True}})
    lines = prompt.splitlines()
    # Between the markers the Pipe removes, one chat variable per setting, in Open WebUI's
    # syntax: a switch and an enum are selects, a number has the graph's bounds and default.
    assert lines[0] == sync.SETTINGS_BEGIN == pipe.SETTINGS_BEGIN
    assert lines[-1] == sync.SETTINGS_END == pipe.SETTINGS_END
    assert lines[1].startswith("run_in_background: {{chat.variables.run_in_background|select:")
    assert 'options=["on", "off"]:default="on"' in lines[1]
    assert 'audience|select:label="Audience":options=["general", "expert"]' in lines[2]
    assert 'default="general"' in lines[2]
    assert "delay_seconds|number:" in lines[3]
    assert ":min=0:max=300:step=1:default=5:" in lines[3]
    assert 'label="Delay Seconds (0 to 300)"' in lines[3]
    # The graph's own choice of background is the default, per graph.
    plain = sync.settings_prompt({"id": "p", "lgos": graph})
    assert 'options=["on", "off"]:default="off"' in plain.splitlines()[1]
    # No background feature, no switch; no settings at all, no prompt.
    assert "run_in_background" not in sync.settings_prompt(
        {"id": "s", "lgos": {"client_settings": SETTINGS}}
    )
    assert sync.settings_prompt({"id": "n", "lgos": {"features": []}}) == ""


def test_the_graph_never_sees_the_settings_lines() -> None:
    prompt = sync.settings_prompt({"id": "g", "lgos": {"client_settings": SETTINGS}})
    # Open WebUI puts the model's prompt before the user's own system prompt, if any.
    messages = [
        {"role": "system", "content": prompt.replace("{{", "").replace("}}", "")},
        {"role": "user", "content": "Hi"},
    ]
    assert pipe.to_input(messages) == [{"role": "user", "content": "Hi"}]
    messages[0]["content"] += "\nBe brief."
    assert pipe.to_input(messages)[0] == {"role": "system", "content": "Be brief."}


def test_the_chats_settings_become_the_graphs_values() -> None:
    switch = {"type": "boolean", "title": "Enthusiastic"}
    schema = {**SETTINGS["json_schema"], "properties": {**SETTINGS["json_schema"]["properties"]}}
    schema["properties"]["enthusiastic"] = switch
    settings = {"json_schema": schema, "defaults": {**SETTINGS["defaults"], "enthusiastic": False}}
    # What the dialog saves: text for selects and a number's default, numbers once edited.
    saved = {"audience": "expert", "delay_seconds": "5", "enthusiastic": "on"}
    assert pipe.changed_settings(saved, settings) == {"audience": "expert", "enthusiastic": True}
    assert pipe.changed_settings({"delay_seconds": 0, "audience": ""}, settings) == {
        "delay_seconds": 0
    }
    # A value the dialog would have refused (set through the API) is named, never replaced.
    with pytest.raises(pipe.SettingError, match="Delay Seconds is 'abc', not a whole number"):
        pipe.changed_settings({"delay_seconds": "abc"}, settings)
    with pytest.raises(pipe.SettingError, match="Enthusiastic is 'maybe', not on or off"):
        pipe.changed_settings({"enthusiastic": "maybe"}, settings)


def test_sources_follow_the_report_numbers() -> None:
    text = "Kites fly [2]. Costs fall [1]."
    annotations = [
        {
            "type": "url_citation",
            "url": "https://c",
            "title": "Costs",
            "start_index": 15,
            "end_index": 25,
        },
        {
            "type": "url_citation",
            "url": "https://k",
            "title": "Kites",
            "start_index": 0,
            "end_index": 9,
        },
    ]
    part = {"type": "output_text", "text": text, "annotations": annotations}
    response = {"output": [{"type": "message", "content": [part]}]}
    # Open WebUI's chip [n] opens the n-th source it was given: source n must be document n.
    # Each with the passage it cites, what the source's popup shows.
    assert pipe.numbered_sources(response) == [
        (1, "Costs", "https://c", "Costs fall"),
        (2, "Kites", "https://k", "Kites fly"),
    ]


def test_gateway_wrapped_error_shows_the_lgos_message() -> None:
    import httpx

    inner = {
        "error": {
            "message": "Invalid runtime setting for delay_seconds: too big.",
            "param": "metadata.lgos_settings",
        }
    }
    wrapped = "litellm.BadRequestError: OpenAIException - " + json.dumps(inner)
    # LiteLLM adds a sentence of its own after the JSON.
    body = {
        "error": {"message": wrapped + "\nLiteLLM: model group 'g' failed with the error above."}
    }
    message, param = pipe._error_message(httpx.Response(400, json=body))
    assert message == "Invalid runtime setting for delay_seconds: too big."
    assert param == "metadata.lgos_settings"


def test_a_gateway_that_cannot_reach_lgos_is_told_from_a_refusal() -> None:
    import httpx

    # What LiteLLM answers when nothing listens behind it (seen with demo/litellm/run.sh).
    lost = (
        "litellm.InternalServerError: InternalServerError: OpenAIException - Cannot connect to "
        "host REDACTED:18999 ssl:<ssl.SSLContext object> [Connect call failed ('REDACTED', "
        "18999)]\n\nLiteLLM: model group 'simple-graph' failed with the error above."
    )
    down = httpx.Response(500, json={"error": {"message": lost, "code": "500"}})
    assert pipe.LgosError.from_response(down).upstream_unreachable
    # LGOS's own refusal through the gateway, and a 5xx of LGOS itself, are not an outage.
    refused = httpx.Response(400, json={"error": {"message": "Connection error in the graph"}})
    assert not pipe.LgosError.from_response(refused).upstream_unreachable
    failed = httpx.Response(500, json={"error": {"message": "The graph raised ValueError"}})
    assert not pipe.LgosError.from_response(failed).upstream_unreachable


def test_progress_line_is_a_state_that_names_the_worker_fix() -> None:
    # No clock in the line: each new line is kept in the message's status history.
    assert pipe.progress_line("queued", waited=1.5) == "Queued"
    assert pipe.progress_line("queued", waited=12, worker_start="just demo/worker") == (
        "Queued for 12 s: no worker has taken this run. Start one with `just demo/worker`."
    )
    assert pipe.progress_line("in_progress", "Reading") == "Running · Reading"


def test_the_no_worker_line_shows_when_the_loop_wakes_a_hair_early(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    import asyncio
    from types import SimpleNamespace

    # Open WebUI runs on uvloop, which counts timers in whole milliseconds: about one sleep in
    # five ends up to 1 ms before the wall clock reaches its deadline. The clock here reads
    # 0.5 ms short of the deadline when the Pipe's timer wakes.
    clock = [1000.2]
    real_sleep = asyncio.sleep

    async def early_sleep(seconds: float) -> None:
        clock[0] += max(0.0, seconds - 0.0005)
        await real_sleep(0)

    lines: list[str] = []

    async def status(line: str, **_: str) -> None:
        lines.append(line)

    async def queued_run() -> None:
        turn = SimpleNamespace(valves=SimpleNamespace(worker_start="just demo/worker"))
        turn.status = status
        live = pipe._LiveStatus(turn)
        await live.start({"id": "resp_1", "status": "queued", "created_at": 1000})
        assert live.warning is not None
        await live.warning  # the timer, which runs once

    monkeypatch.setattr(pipe, "time", SimpleNamespace(time=lambda: clock[0]))
    monkeypatch.setattr(asyncio, "sleep", early_sleep)
    asyncio.run(queued_run())
    assert lines == [
        "Queued",
        "Queued for 3 s: no worker has taken this run. Start one with `just demo/worker`.",
    ]


def test_a_waiting_review_is_asked_once_and_answered_in_words() -> None:
    call = {
        "call_id": "c1",
        "arguments": json.dumps(
            {"question": "Approve it?", "choices": ["approve", "reject"], "report": "R"}
        ),
    }
    review = pipe.Review("resp_1", [call])
    # The card asks the question; the message shows only what is reviewed...
    assert "Approve it?" not in review.card_markdown()
    assert "R" in review.card_markdown()
    # ...until the card is gone: then the message asks it, with the ways to answer.
    assert "Approve it?" in review.waiting_note()
    assert "Answer now" in review.waiting_note()
    assert pipe.Review.from_json(review.as_json()).calls == [call]


@pytest.mark.timeout(600, func_only=True)
def test_sync_again_keeps_function_and_models(
    openwebui_url: str, lgos_url: str, admin_token: str
) -> None:
    command = [sys.executable, str(Path(sync.__file__)), "--url", openwebui_url]
    subprocess.run([*command, "--lgos-url", lgos_url], check=True)

    function = http_json("GET", f"{openwebui_url}/api/v1/functions/id/lgos", token=admin_token)
    assert function["is_active"] is True
    models = http_json("GET", f"{openwebui_url}/api/models", token=admin_token)["data"]
    ids = {model["id"] for model in models}
    lgos_models = http_json("GET", f"{lgos_url}/models")["data"]
    # Each LGOS model is reachable through the Pipe, and only there: Open WebUI's own OpenAI
    # connection (plain entries without background, review or settings) is off.
    for model in lgos_models:
        assert f"lgos.{model['id']}" in ids
        assert model["id"] not in ids
    names = [model["name"] for model in models]
    assert all(name.startswith("LGOS: ") for name in names), names
    described = next(m for m in models if m["id"] == "lgos.background-interrupt")
    assert "interrupts" in json.dumps(described["info"]["meta"]["description"])
    # Open WebUI reads each model's settings from its prompt: only that graph's, typed.
    fields = {
        model["id"]: {
            field["key"]: field
            for field in ((model["info"]["meta"].get("chat_variables_schema") or {}).get("fields"))
            or []
        }
        for model in models
    }
    assert set(fields["lgos.background-mock"]) == {"run_in_background", "delay_seconds"}
    delay = fields["lgos.background-mock"]["delay_seconds"]
    shown = (delay["type"], delay["min"], delay["max"], delay["default"])
    assert shown == ("number", "0", "300", "5")
    assert fields["lgos.background-mock"]["run_in_background"]["default"] == "on"
    assert fields["lgos.background-interrupt"]["run_in_background"]["default"] == "off"
    assert set(fields["lgos.simple-graph"]) == {"audience", "enthusiastic"}
    assert fields["lgos.multi-node-streaming"] == {}


@pytest.mark.timeout(300, func_only=True)
def test_openwebui_reaches_every_graph_as_an_mcp_tool(
    openwebui_url: str, lgos_url: str, admin_token: str
) -> None:
    # The demo's Open WebUI has LGOS's MCP endpoint as a tool server (run.sh, from
    # LGOS_MCP_URL), and Open WebUI's own MCP client lists the graphs through it.
    servers = http_json("GET", f"{openwebui_url}/api/v1/configs/tool_servers", token=admin_token)
    connection = next(c for c in servers["TOOL_SERVER_CONNECTIONS"] if c["info"]["id"] == "lgos")
    assert connection["type"] == "mcp"
    assert connection["url"] == lgos_url.removesuffix("/v1") + "/mcp"
    verify = f"{openwebui_url}/api/v1/configs/tool_servers/verify"
    verified = http_json("POST", verify, connection, token=admin_token)
    assert verified["status"] is True
    tools = {spec["name"]: spec for spec in verified["specs"]}
    graphs = {model["id"] for model in http_json("GET", f"{lgos_url}/models")["data"]}
    assert graphs <= set(tools), graphs - set(tools)
    assert tools["simple-graph"]["parameters"]["type"] == "object"


class _HeaderRecorder(http.server.BaseHTTPRequestHandler):
    """Records the headers of every POST it gets (an MCP client's first request is one) and
    answers 404: it is no MCP server."""

    seen: ClassVar[list[dict[str, str]]] = []

    def do_POST(self) -> None:
        self.seen.append({name.lower(): value for name, value in self.headers.items()})
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the test reads what it recorded."""


@pytest.mark.timeout(120, func_only=True)
def test_a_tool_call_names_the_signed_in_user_to_lgos(openwebui_url: str, admin_token: str) -> None:
    # A tool call through the lgos tool server must act as the user who made it, as that user's
    # chats do through the gateway (LiteLLM names them by their Open WebUI id): Open WebUI fills
    # the connection's x-lgos-user from {{USER_ID}}. Its own connection check expands the
    # headers the same way for the admin, so it is pointed at a server that records them.
    servers = http_json("GET", f"{openwebui_url}/api/v1/configs/tool_servers", token=admin_token)
    connection = next(c for c in servers["TOOL_SERVER_CONNECTIONS"] if c["info"]["id"] == "lgos")
    assert connection["headers"] == {"x-lgos-user": "{{USER_ID}}"}
    _HeaderRecorder.seen = []
    recorder = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _HeaderRecorder)
    threading.Thread(target=recorder.serve_forever, daemon=True).start()
    try:
        probe = {**connection, "url": f"http://127.0.0.1:{recorder.server_port}/mcp"}
        with contextlib.suppress(urllib.error.HTTPError):  # the recorder is no MCP server
            http_json(
                "POST",
                f"{openwebui_url}/api/v1/configs/tool_servers/verify",
                probe,
                token=admin_token,
            )
    finally:
        recorder.shutdown()
        recorder.server_close()
    admin = http_json("GET", f"{openwebui_url}/api/v1/auths/", token=admin_token)
    assert _HeaderRecorder.seen, "Open WebUI never called the tool server"
    assert {request.get("x-lgos-user") for request in _HeaderRecorder.seen} == {admin["id"]}
