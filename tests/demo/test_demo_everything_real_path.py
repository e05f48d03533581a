"""everything-agent's real-model path: with DEMO_OPENAI_* set, its model is LangChain's own
`ChatOpenAI`, and the client's tools, tool_choice, JSON schema, images, files and reasoning
effort travel through it to the OpenAI-compatible server it is pointed at.

No hosted model is reachable here, so the far side is a second `lgos serve` whose graph answers
with what reached it (tests/demo/request_echo.py).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import pytest
from openai import AsyncOpenAI

from tests.support.media import data_url, pdf, png
from tests.support.processes import Process, clean_environment, serving

pytestmark = [pytest.mark.anyio, pytest.mark.processes, pytest.mark.timeout(300, func_only=True)]

PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "The weather in a city.",
    "parameters": PARAMETERS,
}
TIME = {"type": "function", "name": "get_time", "parameters": PARAMETERS}
SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
    "additionalProperties": False,
}
IMAGE = png(64, 48)
PDF = pdf()


@pytest.fixture(scope="module")
def far_server() -> Iterator[Process]:
    with serving(
        ["tests.demo.request_echo:create_registry", "--port", "0"], clean_environment()
    ) as process:
        yield process


@pytest.fixture(scope="module")
def agent_server(far_server: Process) -> Iterator[Process]:
    """The demo registry with its real-model path configured to call `far_server`."""
    env = clean_environment(
        DEMO_OPENAI_MODEL="request-echo",
        DEMO_OPENAI_API_KEY="unused",
        DEMO_OPENAI_BASE_URL=far_server.base_url + "/v1",
    )
    with serving(["demo.registry:create_registry", "--port", "0"], env) as process:
        yield process


async def _far_report(server: Process, stream: bool, **request: Any) -> dict[str, Any]:
    """What the far graph received when everything-agent answered `request`."""
    async with AsyncOpenAI(
        base_url=server.base_url + "/v1",
        api_key="unused",
        _strict_response_validation=True,
        max_retries=0,
        timeout=60,
    ) as client:
        if stream:
            async with client.responses.stream(model="everything-agent", **request) as events:
                response = await events.get_final_response()
        else:
            response = await client.responses.create(model="everything-agent", **request)
    assert response.status == "completed", f"{response.error}\n{server.output()}"
    return json.loads(response.output_text)  # type: ignore[no-any-return]


@pytest.mark.parametrize("stream", [False, True], ids=["create", "stream"])
async def test_tools_schema_and_reasoning_reach_the_far_model(
    agent_server: Process, stream: bool
) -> None:
    report = await _far_report(
        agent_server,
        stream,
        input="What is the weather in Paris?",
        tools=[WEATHER, TIME],
        tool_choice={"type": "function", "name": "get_time"},
        parallel_tool_calls=False,
        # Not strict: the far graph's answer is its report, not a city.
        text={"format": {"type": "json_schema", "name": "city", "schema": SCHEMA, "strict": False}},
        reasoning={"effort": "low", "summary": "auto"},
    )
    assert report["tools"] == [
        {"name": "get_weather", "description": "The weather in a city.", "parameters": PARAMETERS},
        {"name": "get_time", "description": None, "parameters": PARAMETERS},
    ]
    assert report["tool_choice"] == "NamedToolChoice(name='get_time')"
    assert report["parallel_tool_calls"] is False
    assert report["response_format"] == {
        "type": "json_schema",
        "name": "city",
        "schema": SCHEMA,
        "strict": False,
    }
    assert report["reasoning"] == {"effort": "low", "summary": "auto"}
    assert report["messages"] == [
        {"type": "human", "blocks": [{"type": "text", "text": "What is the weather in Paris?"}]}
    ]


async def test_images_and_files_reach_the_far_model_as_content_blocks(
    agent_server: Process,
) -> None:
    report = await _far_report(
        agent_server,
        False,
        input=[
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "What did I send?"},
                    {"type": "input_image", "image_url": data_url("image/png", IMAGE)},
                    {
                        "type": "input_image",
                        "image_url": "https://images.example.invalid/cat.png",
                        "detail": "low",
                    },
                    {
                        "type": "input_file",
                        "filename": "report.pdf",
                        "file_data": data_url("application/pdf", PDF),
                    },
                ],
            }
        ],
    )
    (message,) = report["messages"]
    assert message["type"] == "human"
    text, inline, linked, document = message["blocks"]
    assert text == {"type": "text", "text": "What did I send?"}
    assert inline["type"] == "image"
    assert inline["mime_type"] == "image/png"
    assert inline["base64_length"] == len(base64.b64encode(IMAGE))
    assert linked["type"] == "image"
    assert linked["url"] == "https://images.example.invalid/cat.png"
    # LangChain's converter to OpenAI parts keeps no `detail` (see what-reaches-your-graph.md).
    assert not linked.get("extras")
    assert document["type"] == "file"
    assert document["mime_type"] == "application/pdf"
    assert document["base64_length"] == len(base64.b64encode(PDF))
    assert document["extras"] == {"filename": "report.pdf"}


@pytest.mark.parametrize(
    ("tool_choice", "received"),
    [
        ("required", "'required'"),
        ("none", "'none'"),
        (
            {
                "type": "allowed_tools",
                "mode": "required",
                "tools": [{"type": "function", "name": "get_time"}],
            },
            "AllowedTools(mode='required', names=('get_time',))",
        ),
    ],
    ids=["required", "none", "allowed_tools"],
)
async def test_every_tool_choice_reaches_the_far_model(
    agent_server: Process, tool_choice: Any, received: str
) -> None:
    report = await _far_report(
        agent_server, False, input="Hi", tools=[WEATHER, TIME], tool_choice=tool_choice
    )
    assert report["tool_choice"] == received
