"""The floor: a minimal FastAPI app that runs the graphs directly.

It decodes only the model, the stream flag and the last user text, calls `ainvoke` or `astream`,
and writes the smallest OpenAI-shaped JSON and SSE that a client can read. No validation, no
error envelopes: whatever LGOS costs above this is its overhead.

Run: `uvicorn benchmarks.foreground.bare:app`.
"""

import json
import time
import uuid
from collections.abc import AsyncIterator
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse
from langchain_core.messages import AIMessageChunk, HumanMessage

from benchmarks.foreground.graphs import GRAPHS

app = FastAPI(openapi_url=None)


def _user_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "".join(part.get("text", "") for part in content if isinstance(part, dict))


def _last_user_text(items: Any) -> str:
    if isinstance(items, str):
        return items
    for item in reversed(items):
        if item.get("role") == "user":
            return _user_text(item.get("content", ""))
    return ""


async def _text_deltas(graph: Any, text: str) -> AsyncIterator[str]:
    graph_input = {"messages": [HumanMessage(content=text)]}
    async for chunk, _ in graph.astream(graph_input, stream_mode="messages"):
        if isinstance(chunk, AIMessageChunk) and chunk.content:
            yield chunk.content


def _sse(data: dict[str, Any], event: str | None = None) -> str:
    prefix = f"event: {event}\n" if event else ""
    return f"{prefix}data: {json.dumps(data, separators=(',', ':'))}\n\n"


async def _answer(graph: Any, text: str) -> str:
    output = await graph.ainvoke({"messages": [HumanMessage(content=text)]})
    return output["messages"][-1].text


async def chat(request: Request) -> Any:
    body = json.loads(await request.body())
    model = body["model"]
    graph = GRAPHS[model]
    text = _last_user_text(body["messages"])
    completion_id = f"chatcmpl-{uuid.uuid4().hex}"
    created = int(time.time())
    if not body.get("stream"):
        answer = await _answer(graph, text)
        return JSONResponse(
            {
                "id": completion_id,
                "object": "chat.completion",
                "created": created,
                "model": model,
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": answer},
                        "finish_reason": "stop",
                    }
                ],
            }
        )

    def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> str:
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        return _sse(
            {
                "id": completion_id,
                "object": "chat.completion.chunk",
                "created": created,
                "model": model,
                "choices": [choice],
            }
        )

    async def events() -> AsyncIterator[str]:
        yield chunk({"role": "assistant", "content": ""})
        async for delta in _text_deltas(graph, text):
            yield chunk({"content": delta})
        yield chunk({}, "stop")
        yield "data: [DONE]\n\n"

    return StreamingResponse(events(), media_type="text/event-stream")


async def responses(request: Request) -> Any:
    body = json.loads(await request.body())
    model = body["model"]
    graph = GRAPHS[model]
    text = _last_user_text(body["input"])
    response = {
        "id": f"resp_{uuid.uuid4().hex}",
        "object": "response",
        "created_at": int(time.time()),
        "model": model,
        "status": "in_progress",
        "output": [],
    }
    item_id = f"msg_{uuid.uuid4().hex}"

    def message(answer: str) -> dict[str, Any]:
        content = {"type": "output_text", "text": answer, "annotations": []}
        return {
            "type": "message",
            "id": item_id,
            "role": "assistant",
            "status": "completed",
            "content": [content],
        }

    if not body.get("stream"):
        answer = await _answer(graph, text)
        return JSONResponse(response | {"status": "completed", "output": [message(answer)]})

    async def events() -> AsyncIterator[str]:
        sequence = 0

        def event(kind: str, **fields: Any) -> str:
            nonlocal sequence
            sequence += 1
            return _sse({"type": kind, "sequence_number": sequence - 1, **fields}, kind)

        yield event("response.created", response=response)
        parts = []
        async for delta in _text_deltas(graph, text):
            parts.append(delta)
            yield event(
                "response.output_text.delta",
                item_id=item_id,
                output_index=0,
                content_index=0,
                delta=delta,
            )
        done = response | {"status": "completed", "output": [message("".join(parts))]}
        yield event("response.completed", response=done)

    return StreamingResponse(events(), media_type="text/event-stream")


# Plain Starlette routes: FastAPI's own route class adds dependency and response-model handling
# per request, which a floor should not pay.
app.add_route("/v1/chat/completions", chat, methods=["POST"])
app.add_route("/v1/responses", responses, methods=["POST"])
