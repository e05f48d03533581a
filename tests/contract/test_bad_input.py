"""Malformed and unsupported requests: a clear OpenAI-shaped 4xx naming the field, never a 5xx."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest

pytestmark = pytest.mark.anyio

OK_INPUT = {"model": "echo", "input": "hi"}
OK_CHAT = {"model": "echo", "messages": [{"role": "user", "content": "hi"}]}
META_17 = {f"k{i}": "v" for i in range(17)}

# (path, body or raw bytes, status, param, code)
CASES: list[tuple[str, Any, int, str | None, str | None]] = [
    ("/v1/responses", b"{not json", 400, None, "invalid_json"),
    ("/v1/responses", b"", 400, None, "invalid_json"),
    ("/v1/responses", b"[1, 2]", 400, None, "invalid_type"),
    ("/v1/responses", {"input": "hi"}, 400, "model", "missing_required_parameter"),
    ("/v1/responses", {"model": "echo"}, 400, "input", "missing_required_parameter"),
    ("/v1/responses", {"model": "echo", "input": ""}, 400, "input", "invalid_value"),
    ("/v1/responses", {"model": "echo", "input": []}, 400, "input", "invalid_value"),
    ("/v1/responses", {"model": "echo", "input": 42}, 400, "input", "invalid_type"),
    ("/v1/responses", {"model": 5, "input": "hi"}, 400, "model", "invalid_type"),
    ("/v1/responses", {**OK_INPUT, "stream": "yes"}, 400, "stream", "invalid_type"),
    ("/v1/responses", {**OK_INPUT, "frobnicate": 1}, 400, "frobnicate", "unknown_parameter"),
    (
        "/v1/responses",
        {**OK_INPUT, "temperature": 0.3},
        400,
        "temperature",
        "unsupported_parameter",
    ),
    (
        "/v1/responses",
        {**OK_INPUT, "max_output_tokens": 10},
        400,
        "max_output_tokens",
        "unsupported_parameter",
    ),
    (
        "/v1/responses",
        {**OK_INPUT, "conversation": "conv_1", "previous_response_id": "resp_1"},
        400,
        "conversation",
        "mutually_exclusive_parameters",
    ),
    ("/v1/responses", {**OK_INPUT, "conversation": "conv_1"}, 404, "conversation", None),
    (
        "/v1/responses",
        {**OK_INPUT, "text": {"format": {"type": "json_object"}}},
        400,
        "text.format",
        "unsupported_parameter",
    ),
    (
        "/v1/responses",
        {**OK_INPUT, "stream_options": {"include_obfuscation": False}},
        400,
        "stream_options",
        "invalid_value",
    ),
    (
        "/v1/responses",
        {**OK_INPUT, "previous_response_id": "resp_123"},
        400,
        "previous_response_id",
        "previous_response_not_found",
    ),
    (
        "/v1/responses",
        {**OK_INPUT, "tools": [{"type": "web_search"}]},
        400,
        "tools[0].type",
        "unsupported_value",
    ),
    (
        "/v1/responses",
        {**OK_INPUT, "tools": [{"type": "function"}]},
        400,
        "tools[0].name",
        "missing_required_parameter",
    ),
    ("/v1/responses", {**OK_INPUT, "tool_choice": "required"}, 400, "tool_choice", "invalid_value"),
    (
        "/v1/responses",
        {
            "model": "echo",
            "input": [
                {
                    "role": "user",
                    "content": [{"type": "input_image", "image_url": "https://x/y.png"}],
                }
            ],
        },
        400,
        "input[0].content[0].type",
        "unsupported_value",
    ),
    (
        "/v1/responses",
        {"model": "echo", "input": [{"type": "web_search_call", "id": "ws_1"}]},
        400,
        "input[0].type",
        "unsupported_value",
    ),
    (
        "/v1/responses",
        {"model": "echo", "input": [{"role": "robot", "content": "x"}]},
        400,
        "input[0].role",
        "invalid_value",
    ),
    (
        "/v1/responses",
        {
            "model": "echo",
            "input": [
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "{}"},
                {"role": "user", "content": "x"},
            ],
        },
        400,
        "input",
        "invalid_value",
    ),
    (
        "/v1/responses",
        {
            "model": "echo",
            "input": [
                {"type": "function_call", "call_id": "c1", "name": "f", "arguments": "not json"},
                {"type": "function_call_output", "call_id": "c1", "output": "x"},
                {"role": "user", "content": "y"},
            ],
        },
        400,
        "input[0].arguments",
        "invalid_value",
    ),
    (
        "/v1/responses",
        {**OK_INPUT, "metadata": META_17},
        400,
        "metadata",
        "object_above_max_properties",
    ),
    (
        "/v1/responses",
        {**OK_INPUT, "metadata": {"k" * 65: "v"}},
        400,
        "metadata",
        "property_name_above_max_length",
    ),
    (
        "/v1/responses",
        {**OK_INPUT, "metadata": {"k": "v" * 513}},
        400,
        "metadata.k",
        "string_above_max_length",
    ),
    ("/v1/responses", {**OK_INPUT, "metadata": {"k": 5}}, 400, "metadata.k", "invalid_type"),
    (
        "/v1/responses",
        {**OK_INPUT, "metadata": {"lgos_other": "x"}},
        400,
        "metadata.lgos_other",
        "invalid_value",
    ),
    (
        "/v1/responses",
        {**OK_INPUT, "metadata": {"lgos_settings": "{oops"}},
        400,
        "metadata.lgos_settings",
        "invalid_value",
    ),
    (
        "/v1/responses",
        {**OK_INPUT, "metadata": {"lgos_settings": "[1]"}},
        400,
        "metadata.lgos_settings",
        "invalid_type",
    ),
    (
        "/v1/responses",
        {**OK_INPUT, "metadata": {"lgos_settings": json.dumps({"colour": "red"})}},
        400,
        "metadata.lgos_settings",
        "invalid_value",
    ),
    (
        "/v1/responses",
        {**OK_INPUT, "metadata": {"lgos_settings": json.dumps({"repeat": "2"})}},
        400,
        "metadata.lgos_settings",
        "invalid_value",
    ),
    (
        "/v1/responses",
        {"model": "tool-caller", "input": "x", "metadata": {"lgos_settings": "{}"}},
        400,
        "metadata.lgos_settings",
        "invalid_value",
    ),
    ("/v1/responses", {"model": "no-such-model", "input": "hi"}, 404, "model", "model_not_found"),
    ("/v1/responses", {**OK_INPUT, "background": True}, 400, "background", "unsupported_value"),
    (
        "/v1/responses",
        {
            "model": "echo",
            "input": [{"type": "function_call_output", "call_id": "call_x", "output": "yes"}],
        },
        400,
        "previous_response_id",
        "missing_required_parameter",
    ),
    ("/v1/chat/completions", {"model": "echo"}, 400, "messages", "missing_required_parameter"),
    ("/v1/chat/completions", {"model": "echo", "messages": []}, 400, "messages", "invalid_value"),
    (
        "/v1/chat/completions",
        {**OK_CHAT, "stream_options": {"include_usage": True}},
        400,
        "stream_options",
        "invalid_value",
    ),
    ("/v1/chat/completions", {**OK_CHAT, "n": 2}, 400, "n", "unsupported_parameter"),
    (
        "/v1/chat/completions",
        {**OK_CHAT, "max_tokens": 5},
        400,
        "max_tokens",
        "unsupported_parameter",
    ),
    (
        "/v1/chat/completions",
        {**OK_CHAT, "functions": [{"name": "f"}]},
        400,
        "functions",
        "unsupported_parameter",
    ),
    (
        "/v1/chat/completions",
        {
            "model": "echo",
            "messages": [
                {
                    "role": "user",
                    "content": [{"type": "image_url", "image_url": {"url": "https://x"}}],
                }
            ],
        },
        400,
        "messages[0].content[0].type",
        "unsupported_value",
    ),
    (
        "/v1/chat/completions",
        {"model": "echo", "messages": [{"role": "tool", "content": "x", "tool_call_id": "c9"}]},
        400,
        "messages[0].tool_call_id",
        "invalid_value",
    ),
    (
        "/v1/chat/completions",
        {"model": "echo", "messages": [{"role": "tool", "content": "x"}]},
        400,
        "messages[0].tool_call_id",
        "missing_required_parameter",
    ),
    (
        "/v1/chat/completions",
        {**OK_CHAT, "tools": [{"type": "function", "function": {"name": "bad name!"}}]},
        400,
        "tools[0].function.name",
        "invalid_value",
    ),
    ("/v1/chat/completions", {**OK_CHAT, "model": "nope"}, 404, "model", "model_not_found"),
]


@pytest.mark.parametrize(("path", "body", "status", "param", "code"), CASES)
async def test_bad_request_gets_a_precise_error(
    http: httpx2.AsyncClient, path: str, body: Any, status: int, param: str | None, code: str | None
) -> None:
    if isinstance(body, bytes):
        response = await http.post(path, content=body, headers={"content-type": "application/json"})
    else:
        response = await http.post(path, json=body)
    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param
    assert error["code"] == code
    assert error["message"]


async def test_wrong_content_type_is_rejected(http: httpx2.AsyncClient) -> None:
    response = await http.post(
        "/v1/responses", content=b"model=echo", headers={"content-type": "text/plain"}
    )
    assert response.status_code == 400
    assert response.json()["error"]["code"] == "invalid_content_type"


async def test_retrieving_a_foreground_response_is_404(http: httpx2.AsyncClient) -> None:
    response = await http.get("/v1/responses/resp_0123456789abcdef0123456789abcdef")
    assert response.status_code == 404
