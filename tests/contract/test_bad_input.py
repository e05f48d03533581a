"""Malformed and unsupported requests: a clear OpenAI-shaped 4xx naming the field, never a 5xx."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx2
import pytest
from fastapi import FastAPI

from lgos import InMemoryBackgroundBackend, LanggraphOpenaiServe
from lgos.core.safe_json import MAX_DEPTH, MAX_NUMBER_CHARS
from lgos.http.body import RequestLimits
from lgos.http.errors import install_error_envelopes
from tests.support.graphs import Probe, build_registry
from tests.support.sdk import asgi_http

pytestmark = pytest.mark.anyio

# The table's server accepts bodies up to 64 KiB, so "too large" stays cheap to send.
BODY_LIMIT = 64 * 1024

OK_INPUT = {"model": "echo", "input": "hi"}
OK_CHAT = {"model": "echo", "messages": [{"role": "user", "content": "hi"}]}
AGENT_INPUT = {"model": "everything-agent", "input": "hi"}
AGENT_CHAT = {"model": "everything-agent", "messages": [{"role": "user", "content": "hi"}]}
# A GIF's bytes sent as a PNG.
GIF_B64 = "R0lGODlhAQABAAAAACw="


def agent_parts(*parts: Any) -> dict[str, Any]:
    return {"model": "everything-agent", "input": [{"role": "user", "content": list(parts)}]}


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
        {
            **AGENT_INPUT,
            "text": {"format": {"type": "json_schema", "name": "x", "schema": {"type": 5}}},
        },
        400,
        "text.format.schema",
        "invalid_value",
    ),
    (
        "/v1/responses",
        {**AGENT_INPUT, "text": {"format": {"type": "json_schema", "schema": {}}}},
        400,
        "text.format.name",
        "missing_required_parameter",
    ),
    (
        "/v1/responses",
        {**AGENT_INPUT, "text": {"format": {"type": "json_schema", "name": "a b", "schema": {}}}},
        400,
        "text.format.name",
        "invalid_value",
    ),
    (
        "/v1/responses",
        {**AGENT_INPUT, "text": {"format": {"type": "xml"}}},
        400,
        "text.format.type",
        "invalid_value",
    ),
    (
        "/v1/responses",
        {**AGENT_INPUT, "text": {"format": {"type": "json_object", "schema": {}}}},
        400,
        "text.format.schema",
        "unknown_parameter",
    ),
    (
        "/v1/responses",
        {**OK_INPUT, "reasoning": {"effort": "low"}},
        400,
        "reasoning",
        "unsupported_parameter",
    ),
    (
        "/v1/responses",
        {**AGENT_INPUT, "reasoning": {"effort": "extreme"}},
        400,
        "reasoning.effort",
        "invalid_value",
    ),
    (
        "/v1/chat/completions",
        {**OK_CHAT, "reasoning_effort": "low"},
        400,
        "reasoning_effort",
        "unsupported_parameter",
    ),
    (
        "/v1/chat/completions",
        {**AGENT_CHAT, "reasoning_effort": "lots"},
        400,
        "reasoning_effort",
        "invalid_value",
    ),
    (
        "/v1/chat/completions",
        {**OK_CHAT, "reasoning": {"summary": "auto"}},
        400,
        "reasoning",
        "unsupported_parameter",
    ),
    (
        "/v1/chat/completions",
        {**AGENT_CHAT, "reasoning_effort": "low", "reasoning": {"effort": "high"}},
        400,
        "reasoning.effort",
        "invalid_value",
    ),
    (
        "/v1/responses",
        {**OK_INPUT, "include": ["reasoning.encrypted_content", "message.output_text.logprobs"]},
        400,
        "include[1]",
        "unsupported_value",
    ),
    ("/v1/responses", {**OK_INPUT, "truncation": "sometimes"}, 400, "truncation", "invalid_value"),
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
        {**AGENT_INPUT, "tools": [{"type": "mcp", "server_label": "x"}]},
        400,
        "tools[0].type",
        "unsupported_value",
    ),
    (
        "/v1/responses",
        {
            **AGENT_INPUT,
            "tools": [{"type": "function", "name": "f"}],
            "tool_choice": {
                "type": "allowed_tools",
                "mode": "auto",
                "tools": [{"type": "function", "name": "g"}],
            },
        },
        400,
        "tool_choice.tools[0]",
        "invalid_value",
    ),
    (
        "/v1/responses",
        {
            **AGENT_INPUT,
            "tool_choice": {"type": "allowed_tools", "mode": "sometimes", "tools": []},
        },
        400,
        "tool_choice.mode",
        "invalid_value",
    ),
    (
        "/v1/responses",
        {**AGENT_INPUT, "tool_choice": {"type": "file_search"}},
        400,
        "tool_choice.type",
        "invalid_value",
    ),
    (
        "/v1/chat/completions",
        {
            **AGENT_CHAT,
            "tools": [{"type": "function", "function": {"name": "f"}}],
            "tool_choice": {
                "type": "allowed_tools",
                "allowed_tools": {"mode": "auto", "tools": []},
            },
        },
        400,
        "tool_choice.allowed_tools.tools",
        "invalid_value",
    ),
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
        agent_parts({"type": "input_image", "image_url": "data:image/png;base64,@@@"}),
        400,
        "input[0].content[0].image_url",
        "invalid_value",
    ),
    (
        "/v1/responses",
        agent_parts({"type": "input_image", "image_url": "data:image/png;base64," + GIF_B64}),
        400,
        "input[0].content[0].image_url",
        "invalid_value",
    ),
    (
        "/v1/responses",
        agent_parts({"type": "input_image", "image_url": "data:image/bmp;base64,Qk0="}),
        400,
        "input[0].content[0].image_url",
        "unsupported_value",
    ),
    (
        "/v1/responses",
        agent_parts({"type": "input_image", "image_url": "data:image/png,rawbytes"}),
        400,
        "input[0].content[0].image_url",
        "invalid_value",
    ),
    (
        "/v1/responses",
        agent_parts({"type": "input_image", "image_url": "file:///etc/passwd"}),
        400,
        "input[0].content[0].image_url",
        "invalid_value",
    ),
    (
        "/v1/responses",
        agent_parts({"type": "input_image", "file_id": "file_1"}),
        400,
        "input[0].content[0].image_url",
        "missing_required_parameter",
    ),
    (
        "/v1/responses",
        agent_parts({"type": "input_image", "image_url": "https://x/y.png", "detail": "max"}),
        400,
        "input[0].content[0].detail",
        "invalid_value",
    ),
    (
        "/v1/responses",
        agent_parts(
            {"type": "input_file", "file_data": "data:application/x-msdownload;base64,TVo="}
        ),
        400,
        "input[0].content[0].file_data",
        "unsupported_value",
    ),
    (
        "/v1/responses",
        agent_parts({"type": "input_file", "file_data": "JVBERi0=", "filename": "noext"}),
        400,
        "input[0].content[0].file_data",
        "invalid_value",
    ),
    (
        "/v1/responses",
        agent_parts({"type": "input_file", "file_data": "JVBERi0=", "file_url": "https://x/a.pdf"}),
        400,
        "input[0].content[0]",
        "invalid_value",
    ),
    (
        "/v1/responses",
        agent_parts(*[{"type": "input_image", "image_url": "https://x/y.png"}] * 51),
        400,
        "input",
        "invalid_value",
    ),
    (
        "/v1/responses",
        {
            "model": "echo",
            "input": [
                {"role": "user", "content": [{"type": "input_file", "file_url": "https://x/a.pdf"}]}
            ],
        },
        400,
        "input[0].content[0].type",
        "unsupported_value",
    ),
    (
        "/v1/chat/completions",
        {
            "model": "everything-agent",
            "messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {}}]}],
        },
        400,
        "messages[0].content[0].image_url.url",
        "missing_required_parameter",
    ),
    (
        "/v1/chat/completions",
        {
            "model": "everything-agent",
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "file", "file": {"file_data": "%%%", "filename": "a.pdf"}}
                    ],
                }
            ],
        },
        400,
        "messages[0].content[0].file.file_data",
        "invalid_value",
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
    (
        "/v1/chat/completions",
        {**OK_CHAT, "response_format": {"type": "json_object"}},
        400,
        "response_format",
        "unsupported_parameter",
    ),
    (
        "/v1/chat/completions",
        {
            **AGENT_CHAT,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": "x", "schema": {"properties": []}},
            },
        },
        400,
        "response_format.json_schema.schema",
        "invalid_value",
    ),
    (
        "/v1/chat/completions",
        {**AGENT_CHAT, "response_format": {"type": "json_schema"}},
        400,
        "response_format.json_schema",
        "missing_required_parameter",
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


# ------------------------------------------------------------------------------------------
# Hostile input and errors outside the routes: the same promise, on an app set up the way
# `lgos serve` sets it up (error envelopes on every reply, a body limit).


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    path: str
    status: int
    param: str | None
    code: str | None
    body: Any = None  # a dict goes out as JSON; bytes as they are
    headers: dict[str, str] = field(default_factory=dict)


RESPONSES = "/v1/responses"
CHAT = "/v1/chat/completions"
CONVERSATIONS = "/v1/conversations"
UNKNOWN_ID = "resp_0123456789abcdef0123456789abcdef"


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def raw(prefix: str, value: str, suffix: str = "}") -> bytes:
    return (prefix + value + suffix).encode()


def responses_call(arguments: str) -> dict[str, Any]:
    return {
        "model": "tool-caller",
        "input": [
            {
                "type": "function_call",
                "call_id": "c1",
                "name": "get_weather",
                "arguments": arguments,
            },
            {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
            {"role": "user", "content": "and now?"},
        ],
    }


def chat_call(arguments: str) -> dict[str, Any]:
    return {
        "model": "tool-caller",
        "messages": [
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": arguments},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
        ],
    }


RESPONSES_ARGS = "input[0].arguments"
CHAT_ARGS = "messages[1].tool_calls[0].function.arguments"
DEEP = 1000  # past the interpreter's recursion limit
SHALLOW_DEEP = MAX_DEPTH + 5  # parses, then fails the depth check
LONG_INT = "9" * 4301  # past the interpreter's own int parsing limit
LONGISH_INT = "9" * (MAX_NUMBER_CHARS + 1)
HOSTILE_VALUES: list[tuple[str, str]] = [
    ("nested-1000", nested(DEEP)),
    ("nested-past-limit", nested(SHALLOW_DEEP)),
    ("int-4301-digits", LONG_INT),
    ("int-past-limit", LONGISH_INT),
    ("negative-long-int", "-" + LONG_INT),
    ("float-overflow", "1e999"),
    ("long-float", "0." + "1" * (MAX_NUMBER_CHARS + 5)),
    ("nan", "NaN"),
    ("infinity", "Infinity"),
    ("minus-infinity", "-Infinity"),
    ("nul-string", '"a\\u0000b"'),
    ("nul-key", '{"a\\u0000": 1}'),
    ("deep-objects", '{"a":' * DEEP + "1" + "}" * DEEP),
]


def hostile_cases() -> Iterator[Case]:
    for label, value in HOSTILE_VALUES:
        # Where a body field holds the value: the param names the top-level field.
        for path, prefix, param in [
            (RESPONSES, '{"model": "echo", "input": "hi", "user": ', "user"),
            (RESPONSES, '{"model": "echo", "input": "hi", "frobnicate": ', "frobnicate"),
            (
                CHAT,
                '{"model": "echo", "messages": [{"role": "user", "content": "hi"}], "seed": ',
                "seed",
            ),
            (
                CHAT,
                '{"model": "echo", "messages": [{"role": "user", "content": "hi"}], "stop": ',
                "stop",
            ),
        ]:
            yield Case(
                f"body-{label}-{param}",
                "POST",
                path,
                400,
                param,
                "invalid_value",
                raw(prefix, value),
            )
        # Inside a function call's `arguments` string, on both APIs.
        encoded = json.loads(value.replace("\\\\", "\\")) if label.startswith("nul") else None
        arguments = json.dumps(encoded) if encoded is not None else value
        arguments = '{"x": ' + arguments + "}"
        yield Case(
            f"responses-arguments-{label}",
            "POST",
            RESPONSES,
            400,
            RESPONSES_ARGS,
            "invalid_value",
            responses_call(arguments),
        )
        yield Case(
            f"chat-arguments-{label}",
            "POST",
            CHAT,
            400,
            CHAT_ARGS,
            "invalid_value",
            chat_call(arguments),
        )


def nul_cases() -> Iterator[Case]:
    # A NUL character wherever a client's text goes: 400 invalid_value naming the field.
    nul_in = [  # (name, path, param, body)
        ("nul-in-input", RESPONSES, "input", {"model": "echo", "input": "a\x00b"}),
        ("nul-in-model", RESPONSES, "model", {"model": "echo\x00", "input": "hi"}),
        (
            "nul-in-content",
            RESPONSES,
            "input[0].content",
            {"model": "echo", "input": [{"role": "user", "content": "x\x00"}]},
        ),
        (
            "nul-in-text-part",
            RESPONSES,
            "input[0].content[0].text",
            {
                "model": "echo",
                "input": [{"role": "user", "content": [{"type": "input_text", "text": "\x00"}]}],
            },
        ),
        (
            "nul-in-instructions",
            RESPONSES,
            "instructions",
            {**OK_INPUT, "instructions": "be\x00nice"},
        ),
        ("nul-in-metadata", RESPONSES, "metadata.k", {**OK_INPUT, "metadata": {"k": "\x00"}}),
        ("nul-in-metadata-key", RESPONSES, "metadata", {**OK_INPUT, "metadata": {"k\x00": "v"}}),
        (
            "nul-in-approval-input",
            RESPONSES,
            "input",
            {"model": "approval", "input": "draft \x00 this"},
        ),
        (
            "nul-in-chat-content",
            CHAT,
            "messages[0].content",
            {"model": "echo", "messages": [{"role": "user", "content": "\x00"}]},
        ),
        (
            "nul-in-chat-system",
            CHAT,
            "messages[0].content",
            {
                "model": "echo",
                "messages": [
                    {"role": "system", "content": "\x00"},
                    {"role": "user", "content": "x"},
                ],
            },
        ),
        ("nul-in-chat-user-name", CHAT, "user", {**OK_CHAT, "user": "\x00"}),
    ]
    for name, path, param, body in nul_in:
        yield Case(name, "POST", path, 400, param, "invalid_value", body)
    for path, body in [(RESPONSES, OK_INPUT), (CHAT, OK_CHAT)]:
        for label, settings_value in [
            ("deep", nested(200)),
            ("long-int", '{"repeat": ' + "9" * 400 + "}"),
            ("nul", json.dumps({"prefix": "a\x00"})),
            ("nan", '{"repeat": NaN}'),
        ]:
            yield Case(
                f"settings-{label}-{path}",
                "POST",
                path,
                400,
                "metadata.lgos_settings",
                "invalid_value",
                {**body, "metadata": {"lgos_settings": settings_value}},
            )


def size_cases() -> Iterator[Case]:
    big = "x" * (BODY_LIMIT + 1)
    for path, body in [(RESPONSES, {**OK_INPUT, "input": big}), (CHAT, {**OK_CHAT, "user": big})]:
        yield Case(f"too-large-{path}", "POST", path, 413, None, "request_too_large", body)
        yield Case(
            f"too-large-declared-{path}",
            "POST",
            path,
            413,
            None,
            "request_too_large",
            b"{}",
            {"content-length": str(BODY_LIMIT + 1)},
        )
    yield Case(
        "just-under-limit",
        "POST",
        RESPONSES,
        400,
        "frobnicate",
        "unknown_parameter",
        {**OK_INPUT, "frobnicate": "x" * (BODY_LIMIT - 200)},
    )


def body_shape_cases() -> Iterator[Case]:
    for path in (RESPONSES, CHAT):
        for label, content in [
            ("null", b"null"),
            ("true", b"true"),
            ("number", b"1"),
            ("string", b'"hi"'),
            ("array", b"[]"),
        ]:
            yield Case(f"{label}-body-{path}", "POST", path, 400, None, "invalid_type", content)
        for label, content in [
            ("bad-utf8", b'{"model": "\xff\xfe"}'),
            ("truncated", b'{"model": "echo", '),
            ("trailing-garbage", b'{"model": "echo"} x'),
            ("single-quotes", b"{'model': 'echo'}"),
            ("whitespace", b"   "),
        ]:
            yield Case(f"{label}-{path}", "POST", path, 400, None, "invalid_json", content)
        for label, content_type in [
            ("no-content-type", ""),
            ("text-plain", "text/plain"),
            ("form", "application/x-www-form-urlencoded"),
            ("multipart", "multipart/form-data; boundary=x"),
            ("json-typo", "application/jsn"),
        ]:
            yield Case(
                f"{label}-{path}",
                "POST",
                path,
                400,
                None,
                "invalid_content_type",
                b"{}",
                {"content-type": content_type},
            )


def field_cases() -> Iterator[Case]:
    for name, value in [
        ("top_p", 0.5),
        ("top_logprobs", 2),
        ("max_tool_calls", 1),
        ("presence_penalty", 0.1),
        ("frequency_penalty", 0.1),
        ("reasoning", {"effort": "low"}),
        ("prompt", {"id": "p"}),
        ("prompt_cache_retention", "24h"),
    ]:
        yield Case(
            f"responses-unsupported-{name}",
            "POST",
            RESPONSES,
            400,
            name,
            "unsupported_parameter",
            {**OK_INPUT, name: value},
        )
    for name, value in [
        ("temperature", 0.5),
        ("top_p", 0.5),
        ("max_completion_tokens", 3),
        ("presence_penalty", 0.1),
        ("frequency_penalty", 0.1),
        ("logit_bias", {"1": 1}),
        ("seed", 3),
        ("stop", "x"),
        ("reasoning_effort", "low"),
        ("modalities", ["text"]),
        ("prediction", {"type": "content"}),
        ("top_logprobs", 1),
    ]:
        yield Case(
            f"chat-unsupported-{name}",
            "POST",
            CHAT,
            400,
            name,
            "unsupported_parameter",
            {**OK_CHAT, name: value},
        )
    for path, body in [(RESPONSES, OK_INPUT), (CHAT, OK_CHAT)]:
        for name, value, code in [
            ("stream", 1, "invalid_type"),
            ("stream", None, None),
            ("model", "", "invalid_value"),
            ("model", ["echo"], "invalid_type"),
            ("metadata", "x", "invalid_type"),
            ("parallel_tool_calls", "yes", "invalid_type"),
            ("user", 5, "invalid_type"),
        ]:
            if code is None:
                continue
            yield Case(
                f"field-{name}-{value!r}-{path}",
                "POST",
                path,
                400,
                name,
                code,
                {**body, name: value},
            )


def route_cases() -> Iterator[Case]:
    yield Case("unknown-root-path", "GET", "/nope", 404, None, "not_found")
    yield Case("unknown-post-path", "POST", "/admin", 404, None, "not_found", {})
    yield Case("root", "GET", "/", 404, None, "not_found")
    yield Case("unknown-v1-path", "GET", "/v1/nope", 404, None, None)
    yield Case("unknown-v1-post", "POST", "/v1/embeddings", 404, None, None, {})
    yield Case("get-chat", "GET", CHAT, 404, None, None)
    yield Case("put-models", "PUT", "/v1/models", 404, None, None)
    yield Case("delete-response", "DELETE", f"{RESPONSES}/{UNKNOWN_ID}", 404, "response_id", None)
    for path in ("/v1/models", RESPONSES, CHAT, f"{RESPONSES}/{UNKNOWN_ID}", "/v1/health"):
        yield Case(f"options-{path}", "OPTIONS", path, 405, None, "method_not_allowed")
    yield Case("options-unknown", "OPTIONS", "/somewhere", 404, None, "not_found")
    yield Case("model-not-found", "GET", "/v1/models/nope", 404, "model", "model_not_found")
    yield Case("response-not-found", "GET", f"{RESPONSES}/{UNKNOWN_ID}", 404, "response_id", None)
    yield Case("response-garbage-id", "GET", f"{RESPONSES}/resp_garbage", 404, "response_id", None)
    yield Case("response-plain-id", "GET", f"{RESPONSES}/xyz", 404, "response_id", None)
    yield Case(
        "cancel-not-found", "POST", f"{RESPONSES}/{UNKNOWN_ID}/cancel", 404, "response_id", None
    )
    yield Case(
        "cancel-garbage", "POST", f"{RESPONSES}/{'9' * 5000}/cancel", 404, "response_id", None
    )
    for query, param in [
        ("stream=maybe", "stream"),
        ("starting_after=3", "starting_after"),
        ("stream=true&starting_after=-1", "starting_after"),
        ("stream=true&starting_after=abc", "starting_after"),
        (f"stream=true&starting_after={'9' * 5000}", "starting_after"),
    ]:
        status, code = (400, "invalid_value") if param else (404, None)
        yield Case(
            f"retrieve-{query[:30]}",
            "GET",
            f"{RESPONSES}/{UNKNOWN_ID}?{query}",
            status,
            param,
            code,
        )


def stored_and_conversation_cases() -> Iterator[Case]:
    """The stored Responses and Conversations routes (issue 18)."""
    conversation = f"{CONVERSATIONS}/conv_{'0' * 48}"
    items = f"{conversation}/items"
    yield Case(
        "input-items-unknown",
        "GET",
        f"{RESPONSES}/{UNKNOWN_ID}/input_items",
        404,
        "response_id",
        None,
    )
    for query, param in [
        ("limit=0", "limit"),
        ("limit=101", "limit"),
        ("limit=x", "limit"),
        ("order=sideways", "order"),
    ]:
        yield Case(
            f"input-items-{query}",
            "GET",
            f"{RESPONSES}/{UNKNOWN_ID}/input_items?{query}",
            400,
            param,
            "invalid_value",
        )
    yield Case("conversation-unknown", "GET", conversation, 404, "conversation_id", None)
    yield Case(
        "conversation-update-unknown",
        "POST",
        conversation,
        404,
        "conversation_id",
        None,
        {"metadata": {}},
    )
    yield Case("conversation-delete-unknown", "DELETE", conversation, 404, "conversation_id", None)
    yield Case("conversation-items-unknown", "GET", items, 404, "conversation_id", None)
    yield Case("conversation-item-unknown", "GET", f"{items}/msg_1", 404, "conversation_id", None)
    yield Case(
        "conversation-add-items-unknown",
        "POST",
        items,
        404,
        "conversation_id",
        None,
        {"items": [{"type": "message", "role": "user", "content": "hi"}]},
    )
    yield Case(
        "conversation-create-not-json", "POST", CONVERSATIONS, 400, None, "invalid_json", b"{nope"
    )
    yield Case("conversation-create-array", "POST", CONVERSATIONS, 400, None, "invalid_type", b"[]")
    yield Case(
        "conversation-create-items-type",
        "POST",
        CONVERSATIONS,
        400,
        "items",
        "invalid_type",
        {"items": "hi"},
    )
    yield Case(
        "conversation-create-item-shape",
        "POST",
        CONVERSATIONS,
        400,
        "items[0].type",
        "unsupported_value",
        {"items": [{"type": "spaceship"}]},
    )
    yield Case(
        "conversation-create-metadata",
        "POST",
        CONVERSATIONS,
        400,
        "metadata",
        "invalid_type",
        {"metadata": "x"},
    )
    yield Case(
        "conversation-create-metadata-17",
        "POST",
        CONVERSATIONS,
        400,
        "metadata",
        "object_above_max_properties",
        {"metadata": META_17},
    )
    yield Case(
        "conversation-create-unknown-field",
        "POST",
        CONVERSATIONS,
        400,
        "frobnicate",
        "unknown_parameter",
        {"frobnicate": 1},
    )
    yield Case(
        "conversation-create-deep",
        "POST",
        CONVERSATIONS,
        400,
        "metadata",
        "invalid_value",
        raw('{"metadata": ', nested(DEEP)),
    )
    yield Case(
        "conversation-create-content-type",
        "POST",
        CONVERSATIONS,
        400,
        None,
        "invalid_content_type",
        {},
        {"content-type": "text/plain"},
    )
    yield Case(
        "conversation-create-too-large",
        "POST",
        CONVERSATIONS,
        413,
        None,
        "request_too_large",
        b"{" + b" " * (BODY_LIMIT + 1) + b"}",
    )
    yield Case(
        "conversation-list-items-limit", "GET", f"{items}?limit=0", 400, "limit", "invalid_value"
    )
    yield Case(
        "responses-conversation-object-unknown",
        "POST",
        RESPONSES,
        404,
        "conversation",
        None,
        {**OK_INPUT, "conversation": {"id": "conv_nope"}},
    )
    yield Case(
        "responses-conversation-type",
        "POST",
        RESPONSES,
        400,
        "conversation",
        "invalid_type",
        {**OK_INPUT, "conversation": 5},
    )
    yield Case(
        "responses-store-type",
        "POST",
        RESPONSES,
        400,
        "store",
        "invalid_type",
        {**OK_INPUT, "store": "yes"},
    )


EXTRA_CASES = [
    *hostile_cases(),
    *nul_cases(),
    *size_cases(),
    *body_shape_cases(),
    *field_cases(),
    *route_cases(),
    *stored_and_conversation_cases(),
]


@pytest.fixture
async def guarded_http(probe: Probe) -> AsyncIterator[httpx2.AsyncClient]:
    registry = build_registry(probe)
    background = InMemoryBackgroundBackend(registry)
    application = FastAPI()
    install_error_envelopes(application)
    LanggraphOpenaiServe(
        registry,
        application,
        background=background,
        limits=RequestLimits(max_body_bytes=BODY_LIMIT),
    ).bind_openai_api()
    async with background.lifespan(), asgi_http(application) as client:
        yield client


def test_the_table_is_large() -> None:
    assert len(CASES) + len(EXTRA_CASES) >= 150
    assert len({case.name for case in EXTRA_CASES}) == len(EXTRA_CASES)


@pytest.mark.parametrize("case", EXTRA_CASES, ids=lambda case: case.name)
async def test_hostile_or_misrouted_request_gets_an_envelope(
    guarded_http: httpx2.AsyncClient, case: Case
) -> None:
    headers = dict(case.headers)
    if isinstance(case.body, bytes):
        headers.setdefault("content-type", "application/json")
        content = case.body
    elif case.body is not None:
        headers.setdefault("content-type", "application/json")
        content = json.dumps(case.body).encode()
    else:
        content = None
    if headers.get("content-type") == "":
        del headers["content-type"]
    response = await guarded_http.request(case.method, case.path, content=content, headers=headers)
    assert response.status_code == case.status, response.text
    error = response.json()["error"]
    assert set(error) == {"message", "type", "param", "code"}
    assert error["type"] == "invalid_request_error"
    assert (error["param"], error["code"]) == (case.param, case.code), error
    assert error["message"]
    if case.status == 405:
        assert response.headers["allow"]
