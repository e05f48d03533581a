"""Streams over real sockets: client disconnects cancel the run; idle streams stay alive."""

from __future__ import annotations

import anyio
import httpx2
import pytest
from fastapi import FastAPI
from openai import AsyncOpenAI

from lgos import LanggraphOpenaiServe
from tests.support.graphs import Probe, build_registry
from tests.support.processes import REPO, clean_environment, serving
from tests.support.servers import serve_in_process

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("path", ["/v1/responses", "/v1/chat/completions"])
async def test_a_client_that_disconnects_cancels_the_graph(
    app: FastAPI, probe: Probe, path: str
) -> None:
    body = {"model": "blocking", "stream": True}
    if path == "/v1/responses":
        body["input"] = "go"
    else:
        body["messages"] = [{"role": "user", "content": "go"}]
    async with serve_in_process(app) as url, httpx2.AsyncClient(base_url=url) as http:
        async with http.stream("POST", path, json=body) as response:
            assert response.status_code == 200
            async for line in response.aiter_lines():
                if "waiting" in line:
                    break
            await probe.started.wait()
        # Leaving the block closed the connection mid-stream.
        with anyio.fail_after(10):
            await probe.cancelled.wait()
    assert not probe.release.is_set()


async def test_idle_streams_get_keep_alive_comments() -> None:
    probe = Probe()
    app = FastAPI()
    LanggraphOpenaiServe(build_registry(probe), app, ping_interval=0.05).bind_openai_api()
    body = {"model": "blocking", "input": "go", "stream": True}
    async with (
        serve_in_process(app) as url,
        httpx2.AsyncClient(base_url=url) as http,
        http.stream("POST", "/v1/responses", json=body) as response,
    ):
        lines = []
        async for line in response.aiter_lines():
            lines.append(line)
            if line == ": ping":
                probe.release.set()  # the graph may finish only after a ping arrived
    assert ": ping" in lines
    assert lines.index(": ping") < lines.index("event: response.completed")


async def test_lgos_serve_process_answers_the_sdk() -> None:
    args = ["demo.registry:create_registry", "--port", "0"]
    with serving(args, clean_environment(), cwd=REPO) as server:
        client = AsyncOpenAI(
            base_url=f"{server.base_url}/v1",
            api_key="x",
            _strict_response_validation=True,
            max_retries=0,
        )
        response = await client.responses.create(model="simple-graph", input="over a socket")
        assert response.output_text == "Here is a short answer: you said 'over a socket'."
        completion = await client.chat.completions.create(
            model="multi-node-streaming", messages=[{"role": "user", "content": "x"}]
        )
        assert completion.choices[0].message.content == "First part. Second part. Third part. "
        await client.close()
