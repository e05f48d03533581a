"""A2A contexts are conversations, and tasks live in their owner's scope.

Served: the stateful test graphs (`history` keeps no state and answers with what it was sent;
`counter` keeps a LangGraph thread and counts its turns) and the demo's review graph, with the
owner scope read from `x-tenant` (LGOS_SCOPE_HEADER), as a gateway in front of LGOS sets it.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager

import httpx
import pytest
from a2a.client import Client, ClientConfig, create_client
from a2a.types.a2a_pb2 import (
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    Task,
)
from a2a.utils.errors import TaskNotFoundError

from tests.support.processes import Process, clean_environment, serving

pytestmark = [pytest.mark.anyio, pytest.mark.processes, pytest.mark.timeout(300, func_only=True)]


@pytest.fixture(scope="module")
def server() -> Iterator[Process]:
    env = clean_environment(LGOS_BACKGROUND="memory", LGOS_SCOPE_HEADER="x-tenant")
    with serving(["tests.stateful.registry:create_registry", "--port", "0"], env) as process:
        yield process


@asynccontextmanager
async def agent(server: Process, model: str, tenant: str = "acme") -> AsyncIterator[Client]:
    async with httpx.AsyncClient(headers={"x-tenant": tenant}, timeout=60) as http:
        config = ClientConfig(streaming=False, httpx_client=http)
        client = await create_client(f"{server.base_url}/a2a/{model}", config)
        try:
            yield client
        finally:
            await client.close()


async def say(client: Client, text: str, context_id: str, task: Task | None = None) -> Task:
    message = Message(
        message_id=uuid.uuid4().hex,
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
        context_id=context_id,
        task_id=task.id if task is not None else "",
    )
    (response,) = [
        event async for event in client.send_message(SendMessageRequest(message=message))
    ]
    return response.task


def answer_of(task: Task) -> str:
    return task.artifacts[0].parts[0].text


async def test_a_thread_keeping_graph_continues_its_thread_in_the_context(server: Process) -> None:
    talk, other = uuid.uuid4().hex, uuid.uuid4().hex
    async with agent(server, "counter") as client:
        first = await say(client, "a", talk)
        second = await say(client, "b", talk)
        elsewhere = await say(client, "c", other)
    assert answer_of(first) == "turn 1 saw human:a"
    assert answer_of(second) == "turn 2 saw human:b"  # the thread holds the rest
    assert answer_of(elsewhere) == "turn 1 saw human:c"
    assert first.id != second.id


async def test_a_graph_without_a_thread_is_sent_the_contexts_earlier_turns(
    server: Process,
) -> None:
    talk = uuid.uuid4().hex
    async with agent(server, "history") as client:
        first = await say(client, "a", talk)
        second = await say(client, "b", talk)
        alone = await say(client, "c", uuid.uuid4().hex)
    assert answer_of(first) == "saw human:a"
    assert answer_of(second) == "saw human:a|ai:saw human:a|human:b"
    assert answer_of(alone) == "saw human:c"


async def test_another_tenant_sees_neither_the_task_nor_the_context(server: Process) -> None:
    talk = uuid.uuid4().hex
    async with (
        agent(server, "approval", "acme") as acme,
        agent(server, "approval", "globex") as globex,
    ):
        waiting = await say(acme, "go", talk)
        with pytest.raises(TaskNotFoundError):
            await globex.get_task(GetTaskRequest(id=waiting.id))
        with pytest.raises(TaskNotFoundError):
            await say(globex, "approve", talk, task=waiting)
        done = await say(acme, "approve", talk, task=waiting)
    assert answer_of(done) == "decided approve"
    async with (
        agent(server, "history", "acme") as acme,
        agent(server, "history", "globex") as globex,
    ):
        await say(acme, "secret", talk)
        theirs = await say(globex, "hello", talk)
    assert answer_of(theirs) == "saw human:hello"
