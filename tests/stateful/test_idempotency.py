"""Idempotency-Key on foreground creates, on real `lgos serve` processes (in memory, and two
replicas on one PostgreSQL database) through the strict `openai` SDK: a create retried by the
SDK after a dropped connection, by a client on the other replica, or twenty times at once runs
its graph once (the graph counts its executions in a file) and answers with the first result;
another body with the key is a 409; another owner's key is its own."""

from __future__ import annotations

import asyncio
import time
import uuid
from collections.abc import AsyncIterator, Callable, Iterator
from contextlib import suppress
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import anyio
import openai
import pytest
from openai import AsyncOpenAI

from tests.stateful.servers import LgosServer, start_lgos
from tests.support.postgres import temporary_database

pytestmark = [pytest.mark.anyio, pytest.mark.processes, pytest.mark.timeout(600, func_only=True)]

REGISTRY = "tests.stateful.idempotency_registry:create_registry"
SCOPE_HEADER = "x-tenant"
MODEL = "counted"


@dataclass
class Deployment:
    first: LgosServer
    second: LgosServer  # the other replica on PostgreSQL; the same server in memory
    runs_file: Path
    gate_dir: Path

    def runs(self, marker: str) -> int:
        """How many times the graph ran on `marker`, in any process."""
        if not self.runs_file.exists():
            return 0
        return self.runs_file.read_text().splitlines().count(marker)


@pytest.fixture(scope="module", params=["memory", "postgres"])
def deployment(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    folder = tmp_path_factory.mktemp("idempotency")
    (folder / "gates").mkdir()
    env = {
        "LGOS_SCOPE_HEADER": SCOPE_HEADER,
        "LGOS_TEST_RUNS_FILE": str(folder / "runs.txt"),
        "LGOS_TEST_GATE_DIR": str(folder / "gates"),
    }
    if request.param == "memory":
        server = start_lgos(REGISTRY, "", folder, env)
        try:
            yield Deployment(server, server, folder / "runs.txt", folder / "gates")
        finally:
            server.stop()
        return
    with temporary_database() as uri:
        first = start_lgos(REGISTRY, uri, folder, env)
        try:
            second = start_lgos(REGISTRY, uri, folder, env)
            try:
                yield Deployment(first, second, folder / "runs.txt", folder / "gates")
            finally:
                second.stop()
        finally:
            first.stop()


def sdk(base_url: str, *, retries: int = 0) -> AsyncOpenAI:
    return AsyncOpenAI(
        base_url=base_url,
        api_key="x",
        _strict_response_validation=True,
        max_retries=retries,
        timeout=60,
    )


def keyed(key: str, tenant: str = "acme") -> dict[str, str]:
    return {"Idempotency-Key": key, SCOPE_HEADER: tenant}


def unique(label: str) -> str:
    return f"{label}-{uuid.uuid4().hex[:12]}"


async def eventually(condition: Callable[[], bool], what: str) -> None:
    """Poll a condition (another process's file) with a deadline."""
    deadline = time.monotonic() + 60.0
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await anyio.sleep(0.05)


class DroppingProxy:
    """A TCP proxy to one server that drops its first connection as soon as the server starts
    answering (the request ran, and its reply never reaches the client: a lost link, a gateway
    that gave up), or when `cut()` says so (mid-run). Later connections pass through."""

    def __init__(self, upstream: LgosServer, *, on_answer: bool = True) -> None:
        parts = urlsplit(upstream.base_url)
        self.upstream_port = parts.port
        self.on_answer = on_answer
        self.drops = 0
        self._first_taken = False
        self._first: tuple[asyncio.StreamWriter, asyncio.StreamWriter] | None = None

    def cut(self) -> None:
        """Drop the first connection now, both ways."""
        assert self._first is not None
        self.drops += 1
        for writer in self._first:
            writer.transport.abort()

    async def __aenter__(self) -> DroppingProxy:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()
        await self.server.wait_closed()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    async def _handle(
        self, client_in: asyncio.StreamReader, client_out: asyncio.StreamWriter
    ) -> None:
        drop = not self._first_taken
        self._first_taken = True
        server_in, server_out = await asyncio.open_connection("127.0.0.1", self.upstream_port)
        if drop:
            self._first = (client_out, server_out)

        async def upstream() -> None:
            while data := await client_in.read(65536):
                server_out.write(data)
                await server_out.drain()

        async def downstream() -> None:
            while data := await server_in.read(65536):
                if drop and self.on_answer:
                    self.drops += 1
                    client_out.transport.abort()
                    server_out.transport.abort()
                    return
                client_out.write(data)
                await client_out.drain()

        tasks = [asyncio.ensure_future(upstream()), asyncio.ensure_future(downstream())]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            task.cancel()
        for writer in (client_out, server_out):
            with suppress(Exception):
                writer.close()


@pytest.fixture
async def clients(deployment: Deployment) -> AsyncIterator[tuple[AsyncOpenAI, AsyncOpenAI]]:
    async with sdk(deployment.first.base_url) as first, sdk(deployment.second.base_url) as second:
        yield first, second


async def test_a_create_the_sdk_retries_after_a_dropped_connection_runs_once(
    deployment: Deployment, clients: tuple[AsyncOpenAI, AsyncOpenAI]
) -> None:
    marker, key = unique("dropped"), unique("key")
    async with DroppingProxy(deployment.first) as proxy, sdk(proxy.base_url, retries=2) as client:
        response = await client.responses.create(
            model=MODEL, input=marker, extra_headers=keyed(key)
        )
    assert proxy.drops == 1  # the first reply was lost and the SDK asked again
    assert deployment.runs(marker) == 1
    assert response.output_text == f"ran {marker} after 1"
    # A retry on the other replica answers the same Response, still without a run.
    again = await clients[1].responses.create(model=MODEL, input=marker, extra_headers=keyed(key))
    assert (again.id, again.output_text) == (response.id, response.output_text)
    stored = await clients[1].responses.retrieve(response.id, extra_headers={SCOPE_HEADER: "acme"})
    assert stored.id == response.id
    assert deployment.runs(marker) == 1


async def test_a_create_the_sdk_retries_while_its_first_attempt_runs_runs_once(
    deployment: Deployment, clients: tuple[AsyncOpenAI, AsyncOpenAI]
) -> None:
    name, key = unique("midrun"), unique("key")
    marker = f"gated:{name}"
    async with (
        DroppingProxy(deployment.first, on_answer=False) as proxy,
        sdk(proxy.base_url, retries=2) as client,
        anyio.create_task_group() as group,
    ):
        answers: list[str] = []

        async def create() -> None:
            response = await client.responses.create(
                model=MODEL, input=marker, extra_headers=keyed(key)
            )
            answers.append(response.id)

        group.start_soon(create)
        await eventually(lambda: deployment.runs(marker) == 1, "the first attempt's run")
        proxy.cut()  # the client gives up on the first attempt while its run goes on
        (deployment.gate_dir / name).touch()
    assert proxy.drops == 1
    assert deployment.runs(marker) == 1
    again = await clients[1].responses.create(model=MODEL, input=marker, extra_headers=keyed(key))
    assert answers == [again.id]
    assert deployment.runs(marker) == 1


async def test_a_chat_completion_the_sdk_retries_after_a_dropped_connection_runs_once(
    deployment: Deployment, clients: tuple[AsyncOpenAI, AsyncOpenAI]
) -> None:
    marker, key = unique("chat"), unique("key")
    messages: Any = [{"role": "user", "content": marker}]
    async with DroppingProxy(deployment.first) as proxy, sdk(proxy.base_url, retries=2) as client:
        completion = await client.chat.completions.create(
            model=MODEL, messages=messages, extra_headers=keyed(key)
        )
    assert proxy.drops == 1
    again = await clients[1].chat.completions.create(
        model=MODEL, messages=messages, extra_headers=keyed(key)
    )
    assert again.id == completion.id
    assert again.choices[0].message.content == f"ran {marker} after 1"
    assert deployment.runs(marker) == 1


async def test_a_retried_stream_replays_the_first_stream_without_a_run(
    deployment: Deployment, clients: tuple[AsyncOpenAI, AsyncOpenAI]
) -> None:
    marker, key = unique("stream"), unique("key")

    async def streamed(client: AsyncOpenAI) -> list[dict[str, Any]]:
        stream = await client.responses.create(
            model=MODEL, input=marker, stream=True, store=False, extra_headers=keyed(key)
        )
        return [event.model_dump() async for event in stream]

    first = await streamed(clients[0])
    second = await streamed(clients[1])
    assert first[-1]["type"] == "response.completed"
    assert second == first
    assert deployment.runs(marker) == 1

    chat_key = unique("key")

    async def chat_chunks(client: AsyncOpenAI) -> list[dict[str, Any]]:
        stream = await client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": marker + "-chat"}],
            stream=True,
            extra_headers=keyed(chat_key),
        )
        return [chunk.model_dump() async for chunk in stream]

    chunks = await chat_chunks(clients[0])
    assert await chat_chunks(clients[1]) == chunks
    assert deployment.runs(marker + "-chat") == 1


async def test_twenty_concurrent_creates_with_one_key_make_one_run(
    deployment: Deployment, clients: tuple[AsyncOpenAI, AsyncOpenAI]
) -> None:
    name, key = unique("gate"), unique("key")
    marker = f"gated:{name}"

    async def create(index: int) -> tuple[str, str]:
        client = clients[index % 2]  # alternate between the replicas
        response = await client.responses.create(
            model=MODEL, input=marker, extra_headers=keyed(key)
        )
        return response.id, response.output_text

    results: list[tuple[str, str]] = []
    async with anyio.create_task_group() as group:

        async def collect(index: int) -> None:
            results.append(await create(index))

        for index in range(20):
            group.start_soon(collect, index)
        # The first run holds until the gate opens; the others arrive meanwhile.
        await eventually(lambda: deployment.runs(marker) >= 1, "the first run")
        (deployment.gate_dir / name).touch()
    assert len(results) == 20
    assert len(set(results)) == 1, results
    assert deployment.runs(marker) == 1


async def test_a_reused_key_with_another_body_is_a_conflict(
    deployment: Deployment, clients: tuple[AsyncOpenAI, AsyncOpenAI]
) -> None:
    marker, key = unique("first"), unique("key")
    await clients[0].responses.create(model=MODEL, input=marker, extra_headers=keyed(key))
    other = unique("other")
    with pytest.raises(openai.ConflictError) as caught:
        await clients[1].responses.create(model=MODEL, input=other, extra_headers=keyed(key))
    assert caught.value.status_code == 409
    assert caught.value.code == "idempotency_key_reused"
    assert "different request body" in caught.value.message
    # The same key on another route is another request too.
    with pytest.raises(openai.ConflictError):
        await clients[1].chat.completions.create(
            model=MODEL, messages=[{"role": "user", "content": marker}], extra_headers=keyed(key)
        )
    assert deployment.runs(other) == 0
    # Another owner's key is its own: the same key there runs its own request.
    theirs = await clients[1].responses.create(
        model=MODEL, input=other, extra_headers=keyed(key, tenant="globex")
    )
    assert theirs.output_text == f"ran {other} after 1"
    assert deployment.runs(other) == 1


async def test_a_retried_conversation_turn_appends_one_turn(
    deployment: Deployment, clients: tuple[AsyncOpenAI, AsyncOpenAI]
) -> None:
    tenant = {SCOPE_HEADER: "acme"}
    conversation_key = unique("key")
    conversation = await clients[0].conversations.create(extra_headers=keyed(conversation_key))
    same = await clients[1].conversations.create(extra_headers=keyed(conversation_key))
    assert same.id == conversation.id

    marker, key = unique("turn"), unique("key")

    async def turn(client: AsyncOpenAI) -> str:
        response = await client.responses.create(
            model=MODEL, input=marker, conversation=conversation.id, extra_headers=keyed(key)
        )
        return response.id

    assert await turn(clients[0]) == await turn(clients[1])
    assert deployment.runs(marker) == 1
    listed = await clients[1].conversations.items.list(conversation.id, extra_headers=tenant)
    assert len(listed.data) == 2  # the user's message and the answer, once

    item_key = unique("key")

    async def add(client: AsyncOpenAI) -> list[str]:
        added = await client.conversations.items.create(
            conversation.id,
            items=[{"type": "message", "role": "user", "content": "a note"}],
            extra_headers=keyed(item_key),
        )
        return [item.id for item in added.data]

    assert await add(clients[0]) == await add(clients[1])
    listed = await clients[0].conversations.items.list(conversation.id, extra_headers=tenant)
    assert len(listed.data) == 3


async def test_a_request_that_failed_releases_its_key(
    deployment: Deployment, clients: tuple[AsyncOpenAI, AsyncOpenAI]
) -> None:
    key = unique("key")
    with pytest.raises(openai.NotFoundError):
        await clients[0].responses.create(
            model="no-such-model", input="x", extra_headers=keyed(key)
        )
    # Nothing was answered, so nothing is kept: the key is free for the request that works.
    marker = unique("after-error")
    response = await clients[1].responses.create(
        model=MODEL, input=marker, extra_headers=keyed(key)
    )
    assert response.output_text == f"ran {marker} after 1"
    # ... and from then on it answers with that request's Response.
    again = await clients[0].responses.create(model=MODEL, input=marker, extra_headers=keyed(key))
    assert again.id == response.id
    assert deployment.runs(marker) == 1


async def test_the_key_in_litellms_extra_headers_body_field_counts(
    deployment: Deployment, clients: tuple[AsyncOpenAI, AsyncOpenAI]
) -> None:
    marker, key = unique("litellm"), unique("key")
    carried: Any = {"extra_headers": {"Idempotency-Key": key}}
    tenant = {SCOPE_HEADER: "acme"}
    first = await clients[0].responses.create(
        model=MODEL, input=marker, extra_body=carried, extra_headers=tenant
    )
    second = await clients[1].responses.create(model=MODEL, input=marker, extra_headers=keyed(key))
    assert second.id == first.id
    assert deployment.runs(marker) == 1


async def test_a_stream_its_client_left_releases_its_key(
    deployment: Deployment, clients: tuple[AsyncOpenAI, AsyncOpenAI]
) -> None:
    name, key = unique("left"), unique("key")
    marker = f"gated:{name}"

    async def events(client: AsyncOpenAI) -> list[dict[str, Any]]:
        stream = await client.responses.create(
            model=MODEL, input=marker, stream=True, extra_headers=keyed(key)
        )
        return [event.model_dump() async for event in stream]

    left = await clients[0].responses.create(
        model=MODEL, input=marker, stream=True, extra_headers=keyed(key)
    )
    async for _ in left:
        break  # the client reads the stream's first event and leaves: the run is cancelled
    await left.close()
    await eventually(lambda: deployment.runs(marker) == 1, "the first run")
    (deployment.gate_dir / name).touch()
    # The cancelled run answered nothing, so the retry runs, and its stream is the one kept.
    finished = await events(clients[1])
    assert finished[-1]["type"] == "response.completed"
    assert deployment.runs(marker) == 2
    assert await events(clients[0]) == finished
    assert deployment.runs(marker) == 2


async def test_a_key_whose_replica_died_mid_run_is_taken_over_by_the_retry(
    tmp_path: Path,
) -> None:
    """SIGKILL the replica that holds a key mid-run: its lease lapses (30 s), and the retry on
    the other replica runs the request itself instead of waiting for the key to expire."""
    (tmp_path / "gates").mkdir()
    env = {
        "LGOS_SCOPE_HEADER": SCOPE_HEADER,
        "LGOS_TEST_RUNS_FILE": str(tmp_path / "runs.txt"),
        "LGOS_TEST_GATE_DIR": str(tmp_path / "gates"),
    }
    with temporary_database() as uri:
        doomed = start_lgos(REGISTRY, uri, tmp_path, env)
        try:
            survivor = start_lgos(REGISTRY, uri, tmp_path, env)
        except BaseException:
            doomed.kill()
            raise
        try:
            deployment = Deployment(doomed, survivor, tmp_path / "runs.txt", tmp_path / "gates")
            name, key = unique("killed"), unique("key")
            marker = f"gated:{name}"
            async with sdk(doomed.base_url) as first, anyio.create_task_group() as group:

                async def attempt() -> None:
                    with pytest.raises(openai.APIConnectionError):
                        await first.responses.create(
                            model=MODEL, input=marker, extra_headers=keyed(key)
                        )

                group.start_soon(attempt)
                await eventually(lambda: deployment.runs(marker) == 1, "the first run")
                doomed.kill()
            (deployment.gate_dir / name).touch()
            async with sdk(survivor.base_url) as second:
                response = await second.responses.create(
                    model=MODEL, input=marker, extra_headers=keyed(key)
                )
                assert response.output_text == f"ran {marker} after 1"
                assert deployment.runs(marker) == 2  # the killed run, and the retry's
                again = await second.responses.create(
                    model=MODEL, input=marker, extra_headers=keyed(key)
                )
                assert again.id == response.id
                assert deployment.runs(marker) == 2
        finally:
            survivor.stop()
            doomed.kill()
