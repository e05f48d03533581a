"""One engine conformance suite: what a client of background Responses may rely on, whichever
engine runs them. Parametrized over the in-memory engine, DBOS (API and worker processes on
PostgreSQL) and Hatchet (only with HATCHET_CLIENT_TOKEN; reported as skipped otherwise).
Everything goes through the official SDK in strict mode."""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import openai
import pytest
from openai.types.responses import Response

from tests.background.conftest import Deployment

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.postgres,
    pytest.mark.processes,
    pytest.mark.timeout(600, func_only=True),
]

DEADLINE_SECONDS = 60.0
# How long a client waits for an answer that should come at once.
CLIENT_PATIENCE_SECONDS = 10.0
NO_DELAY = {"lgos_settings": '{"delay_seconds": 0}'}
T = TypeVar("T")


async def eventually(check: Callable[[], Awaitable[T | None]], what: str) -> T:
    """Poll `check` until it returns something truthy (a condition, never a timing)."""
    deadline = time.monotonic() + DEADLINE_SECONDS
    while True:
        result = await check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.05)


async def finished(deployment: Deployment, response_id: str, api: int = 0) -> Response:
    client = deployment.sdk(api)

    async def terminal() -> Response | None:
        response = await client.responses.retrieve(response_id)
        return None if response.status in ("queued", "in_progress") else response

    return await eventually(terminal, f"{response_id} to finish")


async def step_seen(deployment: Deployment, topic: str, step: str, event: str) -> int:
    async def seen() -> int | None:
        for row_step, row_event, pid in await deployment.steps(topic):
            if (row_step, row_event) == (step, event):
                return pid
        return None

    return await eventually(seen, f"{topic}: {step} {event}")


def topic() -> str:
    return f"topic-{uuid.uuid4().hex[:12]}"


async def test_create_returns_queued_then_completes(deployment: Deployment) -> None:
    client = deployment.sdk()
    accepted = await client.responses.create(
        model="background-mock", input="Quarterly risks", background=True, metadata=NO_DELAY
    )
    assert accepted.status == "queued"
    assert accepted.background is True
    assert accepted.output == []
    done = await finished(deployment, accepted.id)
    assert done.id == accepted.id
    assert done.status == "completed"
    assert done.output_text == "Background report for: Quarterly risks"
    assert done.metadata == NO_DELAY


FORECAST_FORMAT = {
    "type": "json_schema",
    "name": "Forecast",
    "schema": {
        "type": "object",
        "properties": {"city": {"type": "string"}, "sunny": {"type": "boolean"}},
        "required": ["city", "sunny"],
        "additionalProperties": False,
    },
    "strict": True,
}


async def test_a_background_run_gets_everything_the_client_sent(deployment: Deployment) -> None:
    # The job carries the answer's shape, the reasoning options and `truncation` to the
    # worker (the API prepared them; the worker decodes nothing), and every snapshot echoes them.
    client = deployment.sdk()
    accepted = await client.responses.create(
        model="everything-background",
        input="What is the weather in Paris?",
        background=True,
        text={"format": FORECAST_FORMAT},  # type: ignore[typeddict-item]
        reasoning={"effort": "low", "summary": "auto"},
        truncation="auto",
    )
    done = await finished(deployment, accepted.id)
    assert done.status == "completed", done.error
    for snapshot in (accepted, done):
        assert snapshot.text.format.model_dump(exclude_none=True, by_alias=True) == FORECAST_FORMAT
        assert snapshot.reasoning is not None
        assert (snapshot.reasoning.effort, snapshot.reasoning.summary) == ("low", "auto")
        assert snapshot.truncation == "auto"
    # The graph answered in the schema, and its reasoning is shown because a summary was asked.
    answer = json.loads(done.output_text)
    assert set(answer) == {"city", "sunny"}
    assert [item.type for item in done.output] == ["reasoning", "message"]


async def test_cancel_queued(deployment: Deployment) -> None:
    client = deployment.sdk()
    blockers: list[str] = []
    held = topic()
    # Fill every worker slot, so the next run waits in the queue.
    for _ in range(deployment.slots):
        blocker = await client.responses.create(model="gated-steps", input=held, background=True)
        blockers.append(blocker.id)
    if blockers:
        await eventually(
            lambda: _count(deployment, held, "step_2", "started", deployment.slots),
            "every slot to be busy",
        )
    never = topic()
    waiting = await client.responses.create(model="gated-steps", input=never, background=True)
    if deployment.slots:
        assert (await client.responses.retrieve(waiting.id)).status == "queued"
    cancelled = await client.responses.cancel(waiting.id)
    assert cancelled.status == "cancelled"
    assert cancelled.id == waiting.id
    await deployment.open_gate(held)
    for blocker_id in blockers:
        assert (await finished(deployment, blocker_id)).status == "completed"
    await deployment.open_gate(never)
    again = await client.responses.retrieve(waiting.id)
    assert again.status == "cancelled"
    assert again.output == []
    if deployment.slots:  # it never started
        assert await deployment.steps(never) == []


async def _count(deployment: Deployment, topic: str, step: str, event: str, n: int) -> bool:
    rows = await deployment.steps(topic)
    return sum(1 for row in rows if row[:2] == (step, event)) >= n


async def test_cancel_running_stops_the_graph(deployment: Deployment) -> None:
    client = deployment.sdk()
    name = topic()
    accepted = await client.responses.create(model="gated-steps", input=name, background=True)
    await step_seen(deployment, name, "step_2", "started")
    assert (await client.responses.retrieve(accepted.id)).status == "in_progress"
    cancelled = await client.responses.cancel(accepted.id)
    assert cancelled.status == "cancelled"
    # The graph itself was interrupted (CancelledError in the node), not just relabelled.
    await step_seen(deployment, name, "step_2", "cancelled")
    await deployment.open_gate(name)
    assert (await client.responses.retrieve(accepted.id)).status == "cancelled"
    assert ("step_3", "started") not in [row[:2] for row in await deployment.steps(name)]


async def test_a_cancel_shows_on_every_api_at_once(deployment: Deployment) -> None:
    # The other API has seen the run in progress; its next poll after the cancel answered
    # must not show that again (on Hatchet, polls read the log, where the cancel writes its end).
    name = topic()
    accepted = await deployment.sdk(0).responses.create(
        model="gated-steps", input=name, background=True
    )
    await step_seen(deployment, name, "step_2", "started")
    other = deployment.sdk(1)
    assert (await other.responses.retrieve(accepted.id)).status == "in_progress"
    assert (await deployment.sdk(0).responses.cancel(accepted.id)).status == "cancelled"
    assert (await other.responses.retrieve(accepted.id)).status == "cancelled"
    await deployment.open_gate(name)


async def test_cancel_finished_returns_it_unchanged(deployment: Deployment) -> None:
    client = deployment.sdk()
    accepted = await client.responses.create(
        model="background-mock", input="Done already", background=True, metadata=NO_DELAY
    )
    done = await finished(deployment, accepted.id)
    after_cancel = await client.responses.cancel(accepted.id)
    assert after_cancel.model_dump() == done.model_dump()
    assert (await client.responses.retrieve(accepted.id)).model_dump() == done.model_dump()


async def test_idempotent_create_under_concurrency(deployment: Deployment) -> None:
    key = str(uuid.uuid4())
    name = topic()
    api_count = len(deployment.apis)

    async def create(index: int) -> Response:
        return await deployment.sdk(index % api_count).responses.create(
            model="gated-steps",
            input=name,
            background=True,
            extra_headers={"Idempotency-Key": key},
        )

    created = await asyncio.gather(*(create(index) for index in range(20)))
    assert len({response.id for response in created}) == 1
    await deployment.open_gate(name)
    done = await finished(deployment, created[0].id)
    assert done.status == "completed"
    # A retry after completion still names the same Response, and nothing ran twice.
    retried = await create(1)
    assert retried.id == done.id
    assert retried.status == "completed"
    steps = await deployment.steps(name)
    assert [row[:2] for row in steps if row[1] == "finished"] == [
        ("step_1", "finished"),
        ("step_2", "finished"),
        ("step_3", "finished"),
    ]


async def test_concurrent_creates_each_get_the_run_of_their_own_request(
    deployment: Deployment,
) -> None:
    # On Hatchet, creates that come while a trigger is on its way reach the engine together in
    # one call (`lgos.integrations.hatchet.triggers`): each must still answer with the run of
    # its own request, and two creates with one key with one run, the key's first.
    key = str(uuid.uuid4())
    topics = [topic() for _ in range(12)]
    keyed = topic()
    api_count = len(deployment.apis)

    async def create(index: int, text: str, idempotency_key: str | None = None) -> Response:
        return await deployment.sdk(index % api_count).responses.create(
            model="background-mock",
            input=text,
            background=True,
            metadata=NO_DELAY,
            extra_headers={"Idempotency-Key": idempotency_key} if idempotency_key else None,
        )

    created = await asyncio.gather(
        *(create(index, text) for index, text in enumerate(topics)),
        create(0, keyed, key),
        create(0, keyed, key),
        create(1, keyed, key),
    )
    plain, same_key = created[: len(topics)], created[len(topics) :]
    assert len({response.id for response in plain}) == len(topics)
    assert len({response.id for response in same_key}) == 1
    assert same_key[0].id not in {response.id for response in plain}
    for text, response in [*zip(topics, plain, strict=True), (keyed, same_key[0])]:
        done = await finished(deployment, response.id)
        assert done.status == "completed"
        assert done.output_text == f"Background report for: {text}"


async def test_idempotency_key_in_litellm_extra_headers(deployment: Deployment) -> None:
    key = str(uuid.uuid4())
    client = deployment.sdk()
    body: dict[str, Any] = {"extra_headers": {"Idempotency-Key": key}}
    first = await client.responses.create(
        model="background-mock",
        input="via body",
        background=True,
        metadata=NO_DELAY,
        extra_body=body,
    )
    second = await client.responses.create(
        model="background-mock",
        input="via body",
        background=True,
        metadata=NO_DELAY,
        extra_headers={"X-Idempotency-Key": key},
    )
    assert first.id == second.id


async def test_key_reused_with_another_body_is_409(deployment: Deployment) -> None:
    key = str(uuid.uuid4())
    client = deployment.sdk()
    first = await client.responses.create(
        model="background-mock",
        input="first body",
        background=True,
        metadata=NO_DELAY,
        extra_headers={"Idempotency-Key": key},
    )
    with pytest.raises(openai.ConflictError) as caught:
        await client.responses.create(
            model="background-mock",
            input="another body",
            background=True,
            metadata=NO_DELAY,
            extra_headers={"Idempotency-Key": key},
        )
    assert caught.value.code == "idempotency_key_reused"
    assert (await finished(deployment, first.id)).output_text.endswith("first body")


async def test_failed_graph_is_failed_without_internals(deployment: Deployment) -> None:
    client = deployment.sdk()
    accepted = await client.responses.create(model="failing", input="boom", background=True)
    done = await finished(deployment, accepted.id)
    assert done.status == "failed"
    assert done.error is not None
    assert "secret internal detail" not in done.error.message


async def test_unknown_id_is_a_prompt_404(deployment: Deployment) -> None:
    # A user's patience, without retries: an engine that waits out an id it does not know
    # (Hatchet's SDK retried each 404 for ~17 s) makes these reads time out instead.
    client = deployment.sdk().with_options(timeout=CLIENT_PATIENCE_SECONDS)
    for unknown in (f"resp_{uuid.uuid4().hex}{uuid.uuid4().hex}", "resp_not-ours"):
        with pytest.raises(openai.NotFoundError):
            await client.responses.retrieve(unknown)
        with pytest.raises(openai.NotFoundError):
            await client.responses.cancel(unknown)


async def test_background_interrupt_round_trip(deployment: Deployment) -> None:
    client = deployment.sdk()
    accepted = await client.responses.create(
        model="background-interrupt", input="Quarterly risks", background=True, metadata=NO_DELAY
    )
    paused = await finished(deployment, accepted.id)
    assert paused.status == "completed"
    reviews = [
        item
        for item in paused.output
        if item.type == "function_call" and item.name == "lgos_interrupt"
    ]
    assert len(reviews) == 1
    assert "Background report for: Quarterly risks" in reviews[0].arguments
    answer = await client.responses.create(
        model="background-interrupt",
        previous_response_id=paused.id,
        input=[
            {"type": "function_call_output", "call_id": review.call_id, "output": "approve"}
            for review in reviews
        ],
        background=True,
        metadata=NO_DELAY,
    )
    assert answer.status == "queued"
    assert answer.id != paused.id
    completed = await finished(deployment, answer.id)
    assert completed.status == "completed"
    assert completed.output_text == "Background report for: Quarterly risks"
    # The pause stays answered once: a second answer to it fails its own Response.
    stale = await client.responses.create(
        model="background-interrupt",
        previous_response_id=paused.id,
        input=[
            {"type": "function_call_output", "call_id": review.call_id, "output": "approve"}
            for review in reviews
        ],
        background=True,
        metadata=NO_DELAY,
    )
    failed = await finished(deployment, stale.id)
    assert failed.status == "failed"
    assert failed.error is not None
    assert failed.error.code is not None
    # Polling the paused Response again still shows the original review call.
    again = await client.responses.retrieve(paused.id)
    assert again.model_dump() == paused.model_dump()


async def test_background_needs_the_feature(deployment: Deployment) -> None:
    client = deployment.sdk()
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(model="foreground-only", input="x", background=True)
    assert caught.value.param == "background"


async def _events(stream: Any) -> list[Any]:
    return [event async for event in stream]


async def _streamed(deployment: Deployment, text: str) -> list[Any]:
    stream = await deployment.sdk().responses.create(
        model="background-mock", input=text, background=True, stream=True, metadata=NO_DELAY
    )
    return await _events(stream)


async def test_streamed_create_yields_the_whole_lifecycle(deployment: Deployment) -> None:
    events = await _streamed(deployment, "Streamed risks")
    types = [event.type for event in events]
    assert types[:3] == ["response.created", "response.queued", "response.in_progress"]
    assert events[0].response.status == "queued"
    assert events[0].response.background is True
    assert "response.output_text.delta" in types
    assert types[-1] == "response.completed"
    assert [event.sequence_number for event in events] == list(range(len(events)))
    final = events[-1].response
    # The graph's progress note ("Preparing the report") streams as a commentary item first.
    assert final.output[-1].type == "message"
    assert final.output[-1].content[0].text == "Background report for: Streamed risks"
    assert len({event.response.id for event in events if hasattr(event, "response")}) == 1
    # What the stream ended with is what a poll returns.
    polled = await deployment.sdk().responses.retrieve(final.id)
    assert polled.model_dump() == final.model_dump()


async def test_deleting_a_streamed_response_deletes_its_events(deployment: Deployment) -> None:
    events = await _streamed(deployment, "Forgotten risks")
    response_id = events[0].response.id
    # The in-memory engine keeps its events in memory; the durable ones in the database.
    durable = deployment.engine != "memory"
    if durable:
        assert await deployment.logged_events(response_id) > 0
    await deployment.sdk().responses.delete(response_id)
    with pytest.raises(openai.NotFoundError):
        await deployment.sdk(1).responses.retrieve(response_id, stream=True)
    if durable:
        # Deleted means gone, not merely hidden: the streamed text is no longer kept.
        assert await deployment.logged_events(response_id) == 0


@pytest.mark.parametrize(
    ("engine", "stream"),
    # A streamed run logs every event; a Hatchet worker logs a run's end even when unstreamed.
    [("dbos", True), ("hatchet", True), ("hatchet", False)],
)
async def test_an_expired_response_takes_its_logged_events_with_it(
    request: pytest.FixtureRequest, engine: str, stream: bool
) -> None:
    deployment: Deployment = request.getfixturevalue(f"{engine}_deployment")
    deployment.ensure_workers()
    try:
        client = deployment.sdk()
        if stream:
            response_id = (await _streamed(deployment, "Expiring risks"))[0].response.id
        else:
            created = await client.responses.create(
                model="background-mock",
                input="Expiring risks",
                background=True,
                metadata=NO_DELAY,
            )
            response_id = (await finished(deployment, created.id)).id
        assert await deployment.logged_events(response_id) > 0
        # The retention sweep the API runs, after the Response has aged past the retention.
        assert await deployment.expire_response(response_id) == 1
        with pytest.raises(openai.NotFoundError):
            await client.responses.input_items.list(response_id)
        assert await deployment.logged_events(response_id) == 0
    finally:
        await deployment.close_clients()


async def test_retrieve_stream_replays_from_the_start(deployment: Deployment) -> None:
    events = await _streamed(deployment, "Replayed risks")
    response_id = events[0].response.id
    client = deployment.sdk(1)  # another API instance where there is one
    replayed = await _events(await client.responses.retrieve(response_id, stream=True))
    assert [event.model_dump() for event in replayed] == [event.model_dump() for event in events]
    # The SDK's helper starts from response.created and accumulates the final Response.
    async with client.responses.stream(response_id=response_id) as helper:
        async for _ in helper:
            pass
        final = await helper.get_final_response()
    assert final.output_text.endswith("Background report for: Replayed risks")


async def test_retrieve_stream_starting_after(deployment: Deployment) -> None:
    events = await _streamed(deployment, "Resumed risks")
    response_id = events[0].response.id
    client = deployment.sdk()
    later = await _events(
        await client.responses.retrieve(
            response_id, stream=True, starting_after=3, include_obfuscation=False
        )
    )
    assert [event.model_dump() for event in later] == [
        event.model_dump() for event in events if event.sequence_number > 3
    ]
    assert later[-1].type == "response.completed"
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.retrieve(response_id, starting_after=3)
    assert caught.value.param == "starting_after"


async def test_disconnecting_from_the_stream_leaves_the_run_running(
    deployment: Deployment,
) -> None:
    client = deployment.sdk()
    name = topic()
    stream = await client.responses.create(
        model="gated-steps", input=name, background=True, stream=True
    )
    response_id = ""
    async for event in stream:
        response_id = event.response.id
        if event.type == "response.in_progress":
            break
    await stream.close()
    await step_seen(deployment, name, "step_2", "started")
    await deployment.open_gate(name)
    done = await finished(deployment, response_id)
    assert done.status == "completed"
    assert ("step_3", "finished") in [row[:2] for row in await deployment.steps(name)]


async def test_stream_of_a_cancelled_run_ends(deployment: Deployment) -> None:
    client = deployment.sdk()
    name = topic()
    stream = await client.responses.create(
        model="gated-steps", input=name, background=True, stream=True
    )
    seen: list[Any] = []
    async for event in stream:
        seen.append(event)
        if event.type == "response.in_progress":
            break
    response_id = seen[0].response.id
    await step_seen(deployment, name, "step_2", "started")
    assert (await client.responses.cancel(response_id)).status == "cancelled"
    seen += await _events(stream)
    assert seen[-1].type == "response.failed"
    assert seen[-1].response.status == "cancelled"
    numbers = [event.sequence_number for event in seen]
    assert numbers == sorted(set(numbers))
    # A later reader gets the same ending.
    replayed = await _events(await client.responses.retrieve(response_id, stream=True))
    assert replayed[0].type == "response.created"
    assert replayed[-1].type == "response.failed"
    assert replayed[-1].response.status == "cancelled"
    await deployment.open_gate(name)


async def test_retrieve_stream_of_a_polled_response_is_400(deployment: Deployment) -> None:
    client = deployment.sdk()
    accepted = await client.responses.create(
        model="background-mock", input="Polled", background=True, metadata=NO_DELAY
    )
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.retrieve(accepted.id, stream=True)
    assert caught.value.param == "stream"
    assert "stream=true" in caught.value.message
    await finished(deployment, accepted.id)


async def test_background_stream_needs_store(deployment: Deployment) -> None:
    client = deployment.sdk()
    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(
            model="background-mock",
            input="x",
            background=True,
            stream=True,
            store=False,
            metadata=NO_DELAY,
        )
    assert caught.value.param == "store"


async def _created_at_across_polls(
    deployment: Deployment, response_id: str, status: str, first: int
) -> None:
    """Retrieve on every API until the clock has passed `first` by a second or more; each
    poll must still be in `status` and report `first` as its creation time."""

    async def clock_moved_on() -> bool:
        for api in range(len(deployment.apis)):
            polled = await deployment.sdk(api).responses.retrieve(response_id)
            assert polled.status == status
            assert polled.created_at == first, (polled.created_at, first)
        return time.time() >= first + 2

    await eventually(clock_moved_on, f"{response_id}: the clock to move on while {status}")


async def test_created_at_is_the_create_time_in_every_state(deployment: Deployment) -> None:
    client = deployment.sdk()
    held, waiting_topic = topic(), topic()
    # Fill every worker slot with a held run, so one more run stays queued.
    blockers = [
        await client.responses.create(model="gated-steps", input=held, background=True)
        for _ in range(deployment.slots)
    ]
    if blockers:
        await eventually(
            lambda: _count(deployment, held, "step_2", "started", deployment.slots),
            "every slot to be busy",
        )
        running = blockers[0]
        await _created_at_across_polls(deployment, running.id, "in_progress", running.created_at)
        queued = await client.responses.create(
            model="gated-steps", input=waiting_topic, background=True
        )
        await _created_at_across_polls(deployment, queued.id, "queued", queued.created_at)
        await deployment.open_gate(held)
    else:  # the in-memory engine starts every run at once: nothing ever waits in a queue
        queued = await client.responses.create(
            model="gated-steps", input=waiting_topic, background=True
        )
        await step_seen(deployment, waiting_topic, "step_2", "started")
        await _created_at_across_polls(deployment, queued.id, "in_progress", queued.created_at)
    await deployment.open_gate(waiting_topic)
    for created in [*blockers, queued]:
        done = await finished(deployment, created.id)
        assert done.status == "completed"
        assert done.created_at == created.created_at
        assert done.completed_at is not None
        assert done.completed_at >= done.created_at
