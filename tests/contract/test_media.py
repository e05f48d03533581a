"""Images and files reach a graph that takes them as LangChain standard content blocks."""

from __future__ import annotations

import base64
from typing import Any

import httpx2
import pytest
from openai import AsyncOpenAI

from lgos.wire import media
from tests.support.media import data_url, pdf, png

pytestmark = pytest.mark.anyio

IMAGE = png(64, 48)
DOCUMENT = pdf()


async def test_a_base64_image_is_described_with_its_dimensions(client: AsyncOpenAI) -> None:
    response = await client.responses.create(
        model="everything-agent",
        input=[
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "What is in this image?"},
                    {
                        "type": "input_image",
                        "image_url": data_url("image/png", IMAGE),
                        "detail": "low",
                    },
                ],
            }
        ],
    )
    assert response.output_text == (
        f"I received an image (image/png, {len(IMAGE)} bytes, 64x48 pixels). "
        "You asked: What is in this image?"
    )


async def test_an_image_url_is_handed_over_not_fetched(client: AsyncOpenAI) -> None:
    url = "https://images.example.invalid/cat.png"  # unresolvable: a fetch would fail
    response = await client.responses.create(
        model="everything-agent",
        input=[
            {
                "role": "user",
                "content": [{"type": "input_image", "image_url": url, "detail": "auto"}],
            }
        ],
    )
    assert f"an image at {url} (not downloaded)" in response.output_text


async def test_files_inline_and_by_url(client: AsyncOpenAI) -> None:
    response = await client.responses.create(
        model="everything-agent",
        input=[
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "Summarise these"},
                    {
                        "type": "input_file",
                        "filename": "report.pdf",
                        "file_data": data_url("application/pdf", DOCUMENT),
                    },
                    {"type": "input_file", "file_url": "https://docs.example.invalid/notes.pdf"},
                ],
            }
        ],
    )
    assert response.output_text == (
        f"I received a file 'report.pdf' (application/pdf, {len(DOCUMENT)} bytes); "
        "a file at https://docs.example.invalid/notes.pdf (not downloaded). "
        "You asked: Summarise these"
    )


async def test_chat_image_and_file_parts(client: AsyncOpenAI) -> None:
    completion = await client.chat.completions.create(
        model="everything-agent",
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Look"},
                    {
                        "type": "image_url",
                        "image_url": {"url": data_url("image/png", IMAGE), "detail": "high"},
                    },
                    {
                        "type": "file",
                        "file": {
                            "filename": "a.pdf",
                            "file_data": base64.b64encode(DOCUMENT).decode(),
                        },
                    },
                ],
            }
        ],
    )
    assert completion.choices[0].message.content == (
        f"I received an image (image/png, {len(IMAGE)} bytes, 64x48 pixels); "
        f"a file 'a.pdf' (application/pdf, {len(DOCUMENT)} bytes). You asked: Look"
    )


async def test_blocks_are_langchain_standard_content(http: httpx2.AsyncClient) -> None:
    from langchain_core.messages import HumanMessage

    from lgos.wire.responses_decoder import decode

    encoded = base64.b64encode(IMAGE).decode()
    decoded = decode(
        {
            "model": "everything-agent",
            "input": [
                {
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "hi"},
                        {
                            "type": "input_image",
                            "image_url": f"data:image/png;base64,{encoded}",
                            "detail": "high",
                        },
                    ],
                }
            ],
        }
    )
    (message,) = decoded.messages
    assert isinstance(message, HumanMessage)
    assert message.content == [
        {"type": "text", "text": "hi"},
        {
            "type": "image",
            "base64": encoded,
            "mime_type": "image/png",
            "extras": {"detail": "high"},
        },
    ]
    assert [block["type"] for block in message.content_blocks] == ["text", "image"]


async def test_a_graph_without_image_input_is_named(http: httpx2.AsyncClient) -> None:
    reply = await http.post(
        "/v1/chat/completions",
        json={
            "model": "echo",
            "messages": [
                {
                    "role": "user",
                    "content": [
                        {"type": "image_url", "image_url": {"url": data_url("image/png", IMAGE)}}
                    ],
                }
            ],
        },
    )
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["param"] == "messages[0].content[0].type"
    assert "the model 'echo' does not take images" in error["message"]


async def test_an_oversized_image_is_refused(
    http: httpx2.AsyncClient, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(media, "MAX_INLINE_BYTES", len(IMAGE) - 1)
    reply = await http.post("/v1/responses", json=_image_body(data_url("image/png", IMAGE)))
    assert reply.status_code == 400
    error = reply.json()["error"]
    assert error["param"] == "input[0].content[0].image_url"
    assert f"larger than {len(IMAGE) - 1} bytes" in error["message"]


def _image_body(url: str) -> dict[str, Any]:
    return {
        "model": "everything-agent",
        "input": [{"role": "user", "content": [{"type": "input_image", "image_url": url}]}],
    }
