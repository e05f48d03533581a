"""Stateful Responses on real `lgos serve` processes, in memory and on PostgreSQL, through the
official SDK in strict mode: chaining by `previous_response_id` and by `conversation`, on a
graph without memory and on one that keeps its thread; stored Responses read back and
deleted; pauses and background turns inside conversations; owner scopes."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import openai
import pytest
from openai import AsyncOpenAI
from openai.types.responses import Response, ResponseFunctionToolCall

from tests.stateful.servers import LgosServer, start_lgos, start_worker
from tests.support.postgres import temporary_database

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.processes,
    # Real API, worker and engine processes start inside these tests; on a loaded 2-core host
    # that alone passed 120 s (docs/design-choices.md: such modules mark 600 s).
    pytest.mark.timeout(600, func_only=True),
]

REGISTRY = "tests.stateful.registry:create_registry"
SCOPE_HEADER = "x-tenant"


@pytest.fixture(scope="module", params=["memory", "postgres"])
def deployment(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, LgosServer]]:
    env = {"LGOS_BACKGROUND": "memory", "LGOS_SCOPE_HEADER": SCOPE_HEADER}
    log_dir = tmp_path_factory.mktemp("stateful")
    if request.param == "memory":
        server = start_lgos(REGISTRY, "", log_dir, env)
        try:
            yield "", server
        finally:
            server.stop()
        return
    with temporary_database() as uri:
        server = start_lgos(REGISTRY, uri, log_dir, env)
        try:
            yield uri, server
        finally:
            server.stop()


@pytest.fixture
async def server_client(deployment: tuple[str, LgosServer]) -> AsyncIterator[AsyncOpenAI]:
    async with deployment[1].sdk() as sdk:
        yield sdk


def tenant(sdk: AsyncOpenAI, name: str) -> AsyncOpenAI:
    return sdk.with_options(default_headers={SCOPE_HEADER: name})


EXPECTED_BY_CHAIN = {
    "history": [
        "saw human:one",
        "saw human:one|ai:saw human:one|human:two",
        "saw human:one|ai:saw human:one|human:two|ai:saw human:one|ai:saw human:one|human:two"
        "|human:three",
    ],
    # The thread's own counter grows, and each turn receives only its new input.
    "counter": ["turn 1 saw human:one", "turn 2 saw human:two", "turn 3 saw human:three"],
}


@pytest.mark.parametrize("model", ["history", "counter"])
async def test_three_turns_by_previous_response_id(server_client: AsyncOpenAI, model: str) -> None:
    answers = []
    previous: str | None = None
    for text in ("one", "two", "three"):
        response = await server_client.responses.create(
            model=model,
            input=text,
            **({"previous_response_id": previous} if previous else {}),  # type: ignore[arg-type]
        )
        assert response.previous_response_id == previous
        answers.append(response.output_text)
        previous = response.id
    assert answers == EXPECTED_BY_CHAIN[model]


@pytest.mark.parametrize("model", ["history", "counter"])
async def test_three_turns_by_conversation(server_client: AsyncOpenAI, model: str) -> None:
    conversation = await server_client.conversations.create(metadata={"topic": "numbers"})
    answers = []
    for text in ("one", "two", "three"):
        response = await server_client.responses.create(
            model=model, input=text, conversation=conversation.id
        )
        assert response.conversation is not None
        assert response.conversation.id == conversation.id
        answers.append(response.output_text)
    if model == "counter":
        assert answers == ["turn 1 saw human:one", "turn 2 saw human:two", "turn 3 saw human:three"]
    else:
        assert answers == [
            "saw human:one",
            "saw human:one|ai:saw human:one|human:two",
            "saw human:one|ai:saw human:one|human:two|ai:saw human:one|ai:saw human:one|"
            "human:two|human:three",
        ]
    listed = [
        item async for item in server_client.conversations.items.list(conversation.id, order="asc")
    ]
    assert [item.type for item in listed] == ["message"] * 6
    roles = [item.role for item in listed]  # type: ignore[union-attr]
    assert roles == ["user", "assistant"] * 3
    fetched = await server_client.conversations.retrieve(conversation.id)
    assert fetched.metadata == {"topic": "numbers"}


async def test_a_thread_keeping_conversation_picks_up_added_items(
    server_client: AsyncOpenAI,
) -> None:
    conversation = await server_client.conversations.create(
        items=[{"type": "message", "role": "user", "content": "zero"}]
    )
    first = await server_client.responses.create(
        model="counter", input="one", conversation=conversation.id
    )
    assert first.output_text == "turn 1 saw human:zero|human:one"
    await server_client.conversations.items.create(
        conversation.id, items=[{"type": "message", "role": "user", "content": "aside"}]
    )
    second = await server_client.responses.create(
        model="counter", input="two", conversation=conversation.id
    )
    assert second.output_text == "turn 2 saw human:aside|human:two"


async def test_stored_response_is_read_listed_and_deleted(server_client: AsyncOpenAI) -> None:
    items: Any = [{"role": "user", "content": f"m{n}"} for n in range(5)]
    created = await server_client.responses.create(model="history", input=items)
    fetched = await server_client.responses.retrieve(created.id)
    assert fetched.output_text == created.output_text
    ascending = [
        item.id
        async for item in server_client.responses.input_items.list(created.id, order="asc", limit=2)
    ]
    descending = [
        item.id async for item in server_client.responses.input_items.list(created.id, limit=2)
    ]
    assert len(ascending) == 5
    assert descending == list(reversed(ascending))
    await server_client.responses.delete(created.id)
    with pytest.raises(openai.NotFoundError):
        await server_client.responses.retrieve(created.id)


async def test_store_false_is_not_found(server_client: AsyncOpenAI) -> None:
    created = await server_client.responses.create(model="history", input="x", store=False)
    with pytest.raises(openai.NotFoundError):
        await server_client.responses.retrieve(created.id)


def pending_call(response: Response) -> ResponseFunctionToolCall:
    calls = [item for item in response.output if isinstance(item, ResponseFunctionToolCall)]
    assert [call.name for call in calls] == ["lgos_interrupt"]
    return calls[0]


def answer(paused: Response, output: str) -> Any:
    return [
        {"type": "function_call_output", "call_id": pending_call(paused).call_id, "output": output}
    ]


async def test_a_pause_inside_a_conversation_is_answered_and_it_continues(
    server_client: AsyncOpenAI,
) -> None:
    conversation = await server_client.conversations.create()
    opened = await server_client.responses.create(
        model="history", input="hello", conversation=conversation.id
    )
    paused = await server_client.responses.create(
        model="approval", input="may I?", conversation=conversation.id
    )
    resumed = await server_client.responses.create(
        model="approval", input=answer(paused, "yes"), conversation=conversation.id
    )
    assert resumed.output_text == "decided yes"
    after = await server_client.responses.create(
        model="history", input="and now?", conversation=conversation.id
    )
    assert after.output_text == (
        f"saw human:hello|ai:{opened.output_text}|human:may I?|ai:|tool:yes|ai:decided yes"
        "|human:and now?"
    )


async def test_a_pause_in_a_chain_is_answered_and_the_chain_continues(
    server_client: AsyncOpenAI,
) -> None:
    first = await server_client.responses.create(model="history", input="hello")
    paused = await server_client.responses.create(
        model="approval", input="may I?", previous_response_id=first.id
    )
    resumed = await server_client.responses.create(
        model="approval", input=answer(paused, "no"), previous_response_id=paused.id
    )
    assert resumed.output_text == "decided no"
    with pytest.raises(openai.ConflictError) as twice:
        await server_client.responses.create(
            model="approval", input=answer(paused, "yes"), previous_response_id=paused.id
        )
    assert twice.value.code == "interrupt_state_conflict"
    then = await server_client.responses.create(
        model="history", input="so?", previous_response_id=resumed.id
    )
    assert then.output_text.endswith("human:may I?|ai:|tool:no|ai:decided no|human:so?")


async def wait_until_done(server_client: AsyncOpenAI, response: Response) -> Response:
    with anyio.fail_after(60):
        while response.status in ("queued", "in_progress"):
            await anyio.sleep(0.05)
            response = await server_client.responses.retrieve(response.id)
    return response


@pytest.mark.parametrize("model", ["history", "counter"])
async def test_a_background_turn_in_a_conversation(server_client: AsyncOpenAI, model: str) -> None:
    await background_turn_in_a_conversation(server_client, model)


async def background_turn_in_a_conversation(server_client: AsyncOpenAI, model: str) -> None:
    """A foreground turn, a background one, then a foreground one that sees the background
    turn's answer; the conversation lists all six items."""
    conversation = await server_client.conversations.create()
    await server_client.responses.create(model=model, input="one", conversation=conversation.id)
    queued = await server_client.responses.create(
        model=model, input="two", conversation=conversation.id, background=True
    )
    assert queued.status == "queued"
    done = await wait_until_done(server_client, queued)
    assert done.status == "completed"
    third = await server_client.responses.create(
        model=model, input="three", conversation=conversation.id
    )
    if model == "counter":
        assert done.output_text == "turn 2 saw human:two"
        assert third.output_text == "turn 3 saw human:three"
    else:
        assert third.output_text.endswith(f"human:two|ai:{done.output_text}|human:three")
    items = [item async for item in server_client.conversations.items.list(conversation.id)]
    assert len(items) == 6


@pytest.fixture(scope="module", params=["dbos", "hatchet"])
def durable_deployment(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LgosServer]:
    """One API and one worker on a durable engine: a background turn runs in another process."""
    env = {"LGOS_BACKGROUND": request.param}
    if request.param == "hatchet":
        env.update(request.getfixturevalue("hatchet_engine"))
    with temporary_database() as uri:
        server = start_lgos(REGISTRY, uri, tmp_path_factory.mktemp("durable"), env)
        try:
            worker = start_worker(REGISTRY, uri, env)
            try:
                yield server
            finally:
                worker.stop()
        finally:
            server.stop()


@pytest.mark.parametrize("model", ["history", "counter"])
async def test_a_background_turn_in_a_conversation_on_a_durable_engine(
    durable_deployment: LgosServer, model: str
) -> None:
    async with durable_deployment.sdk() as client:
        await background_turn_in_a_conversation(client, model)


async def test_a_foreign_scope_gets_404_everywhere(server_client: AsyncOpenAI) -> None:
    alice, mallory = tenant(server_client, "alice"), tenant(server_client, "mallory")
    response = await alice.responses.create(model="history", input="secret")
    conversation = await alice.conversations.create(
        items=[{"type": "message", "role": "user", "content": "secret"}]
    )
    items = await alice.conversations.items.list(conversation.id)
    calls = [
        mallory.responses.retrieve(response.id),
        mallory.responses.input_items.list(response.id),
        mallory.responses.delete(response.id),
        mallory.conversations.retrieve(conversation.id),
        mallory.conversations.update(conversation.id, metadata={"x": "y"}),
        mallory.conversations.items.list(conversation.id),
        mallory.conversations.items.retrieve(items.data[0].id, conversation_id=conversation.id),
        mallory.conversations.items.create(
            conversation.id, items=[{"type": "message", "role": "user", "content": "x"}]
        ),
        mallory.conversations.items.delete(items.data[0].id, conversation_id=conversation.id),
        mallory.conversations.delete(conversation.id),
    ]
    for call in calls:
        with pytest.raises(openai.NotFoundError):
            await call
    with pytest.raises(openai.BadRequestError) as chained:
        await mallory.responses.create(model="history", input="x", previous_response_id=response.id)
    assert chained.value.code == "previous_response_not_found"
    with pytest.raises(openai.NotFoundError):
        await mallory.responses.create(model="history", input="x", conversation=conversation.id)
    assert (await alice.responses.retrieve(response.id)).output_text == "saw human:secret"
    assert (await alice.conversations.retrieve(conversation.id)).id == conversation.id


async def test_deleting_a_conversation_deletes_its_thread(
    server_client: AsyncOpenAI, deployment: tuple[str, LgosServer]
) -> None:
    conversation = await server_client.conversations.create()
    await server_client.responses.create(model="counter", input="one", conversation=conversation.id)
    deleted = await server_client.conversations.delete(conversation.id)
    assert deleted.deleted is True
    with pytest.raises(openai.NotFoundError):
        await server_client.conversations.retrieve(conversation.id)
    with pytest.raises(openai.NotFoundError):
        await server_client.responses.create(
            model="counter", input="two", conversation=conversation.id
        )
    uri = deployment[0]
    if uri:
        import psycopg

        from lgos.run.interrupts import checkpoint_thread_id

        thread = checkpoint_thread_id("default", "counter", conversation.id.removeprefix("conv_"))
        with psycopg.connect(uri) as conn:
            rows = conn.execute("SELECT count(*) FROM checkpoints WHERE thread_id = %s", (thread,))
            assert rows.fetchone() == (0,)


async def test_a_second_process_answers_for_what_the_first_stored(
    deployment: tuple[str, LgosServer], tmp_path: Path
) -> None:
    uri, first = deployment
    second = await anyio.to_thread.run_sync(
        lambda: start_lgos(REGISTRY, uri, tmp_path, {"LGOS_SCOPE_HEADER": SCOPE_HEADER})
    )
    try:
        if not uri:
            # In memory each process keeps its own: what one stored, the other does not know.
            async with first.sdk() as one, second.sdk() as two:
                stored = await one.responses.create(model="history", input="here")
                with pytest.raises(openai.NotFoundError):
                    await two.responses.retrieve(stored.id)
            return
        async with first.sdk() as one, second.sdk() as two:
            conversation = await one.conversations.create(metadata={"k": "v"})
            turn = await one.responses.create(
                model="counter", input="one", conversation=conversation.id
            )
            chained = await one.responses.create(model="counter", input="a")
            assert (await two.responses.retrieve(turn.id)).output_text == turn.output_text
            listed = await two.responses.input_items.list(turn.id)
            assert listed.data[0].id == (await one.responses.input_items.list(turn.id)).data[0].id
            assert (await two.conversations.retrieve(conversation.id)).metadata == {"k": "v"}
            next_turn = await two.responses.create(
                model="counter", input="two", conversation=conversation.id
            )
            assert next_turn.output_text == "turn 2 saw human:two"
            next_link = await two.responses.create(
                model="counter", input="b", previous_response_id=chained.id
            )
            assert next_link.output_text == "turn 2 saw human:b"
            await two.responses.delete(turn.id)
            with pytest.raises(openai.NotFoundError):
                await one.responses.retrieve(turn.id)
    finally:
        second.stop()


async def test_the_model_listing_tells_which_graphs_keep_state(server_client: AsyncOpenAI) -> None:
    listing = {model.id: model async for model in server_client.models.list()}
    features = {
        model_id: (model.model_extra or {})["lgos"]["features"]
        for model_id, model in listing.items()
    }
    assert "threads" in features["counter"]
    assert "threads" not in features["history"]


async def test_chat_completions_stay_stateless_on_a_thread_keeping_graph(
    server_client: AsyncOpenAI,
) -> None:
    for _ in range(2):
        completion = await server_client.chat.completions.create(
            model="counter", messages=[{"role": "user", "content": "hi"}]
        )
        assert completion.choices[0].message.content == "turn 1 saw human:hi"
