"""Real `lgos serve` processes sharing PostgreSQL: restarts, replicas and expiry."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from datetime import timedelta

import anyio
import openai
import psycopg
import pytest
from openai import AsyncOpenAI
from openai.types.responses import Response, ResponseFunctionToolCall

from lgos import ServerSettings, delete_expired_interrupt_runs, open_resources
from tests.postgres.side_effect_registry import MODEL as COUNTED_MODEL
from tests.postgres.side_effect_registry import SIDE_EFFECTS_TABLE
from tests.support.processes import Process, clean_environment, lgos

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.postgres,
    pytest.mark.processes,
    pytest.mark.timeout(600),
]

DEMO = "demo.registry:create_registry"
COUNTED = "tests.postgres.side_effect_registry:create_registry"
APPROVAL = "interruptible-approval"


@pytest.fixture
def servers() -> Iterator[list[Process]]:
    """Every server a test starts, stopped at the end whatever happened."""
    started: list[Process] = []
    try:
        yield started
    finally:
        for server in started:
            server.stop()


def start_lgos(registry: str, database: str, extra_env: dict[str, str] | None) -> Process:
    env = clean_environment(
        **{
            "LGOS_POSTGRES_URI": database,
            "LGOS_BACKGROUND": "none",
            "LGOS_INTERRUPT_SWEEP_INTERVAL_MINUTES": "0",
            **(extra_env or {}),
        }
    )
    server = lgos("serve", registry, "--host", "127.0.0.1", "--port", "0", env=env)
    try:
        server.wait_until_serving()
    except BaseException:
        server.kill()
        raise
    return server


async def start(
    servers: list[Process],
    registry: str,
    database: str,
    extra_env: dict[str, str] | None = None,
) -> Process:
    server = await anyio.to_thread.run_sync(lambda: start_lgos(registry, database, extra_env))
    servers.append(server)
    return server


def sdk(server: Process) -> AsyncOpenAI:
    return AsyncOpenAI(
        base_url=f"{server.base_url}/v1",
        api_key="x",
        _strict_response_validation=True,
        max_retries=0,
        timeout=60,
    )


def pending_call(response: Response) -> ResponseFunctionToolCall:
    assert response.status == "completed"
    calls = [item for item in response.output if item.type == "function_call"]
    assert len(calls) == 1, response.output
    call = calls[0]
    assert isinstance(call, ResponseFunctionToolCall)
    assert call.name == "lgos_interrupt"
    return call


async def answer(server: Process, paused: Response, output: str) -> Response:
    async with sdk(server) as client:
        return await client.responses.create(
            model=paused.model,
            previous_response_id=paused.id,
            input=[
                {
                    "type": "function_call_output",
                    "call_id": pending_call(paused).call_id,
                    "output": output,
                }
            ],
        )


async def query(database: str, statement: str) -> list[tuple[object, ...]]:
    async with await psycopg.AsyncConnection.connect(database, autocommit=True) as conn:
        cur = await conn.execute(statement)
        return list(await cur.fetchall())


async def paused_threads(database: str) -> set[str]:
    return {str(row[0]) for row in await query(database, "SELECT thread_id FROM lgos_paused_runs")}


async def test_a_pause_is_answered_by_another_process_after_a_crash(
    database: str, servers: list[Process]
) -> None:
    first = await start(servers, DEMO, database)
    async with sdk(first) as client:
        paused = await client.responses.create(model=APPROVAL, input="the quarterly report")
    call = pending_call(paused)
    assert "the quarterly report" in call.arguments
    assert len(await paused_threads(database)) == 1

    await anyio.to_thread.run_sync(first.kill)
    second = await start(servers, DEMO, database)

    finished = await answer(second, paused, "approve")
    assert finished.status == "completed"
    assert finished.output_text == "Published 'the quarterly report'."
    # A finished run leaves nothing behind: no pause, no checkpoint.
    assert await paused_threads(database) == set()
    assert await query(database, "SELECT count(*) FROM checkpoints") == [(0,)]

    # The answer applied once: repeating it is a conflict, not a second publication.
    with pytest.raises(openai.ConflictError) as repeated:
        await answer(second, paused, "approve")
    assert repeated.value.code == "interrupt_state_conflict"
    assert repeated.value.response.headers.get("x-should-retry") == "false"


async def test_two_replicas_racing_on_one_answer_apply_it_once(
    database: str, servers: list[Process]
) -> None:
    replica_a = await start(servers, COUNTED, database)
    replica_b = await start(servers, COUNTED, database)
    conflict_codes: set[str | None] = set()
    rounds = 3
    for round_number in range(rounds):
        async with sdk(replica_a) as client:
            paused = await client.responses.create(
                model=COUNTED_MODEL, input=f"round {round_number}"
            )
        results = await asyncio.gather(
            answer(replica_a, paused, "approve"),
            answer(replica_b, paused, "approve"),
            return_exceptions=True,
        )
        successes = [result for result in results if isinstance(result, Response)]
        conflicts = [result for result in results if isinstance(result, openai.ConflictError)]
        assert len(successes) == 1, results
        assert len(conflicts) == 1, results
        assert successes[0].output_text == "done: approve"
        conflict = conflicts[0]
        assert conflict.code in {"interrupt_state_conflict", "run_busy"}
        assert conflict.response.headers.get("x-should-retry") == "false"
        conflict_codes.add(conflict.code)
        side_effects = await query(database, f"SELECT count(*) FROM {SIDE_EFFECTS_TABLE}")
        assert side_effects == [(round_number + 1,)]
    print(f"conflict codes seen over {rounds} races: {sorted(map(str, conflict_codes))}")


async def wait_until_swept(database: str, thread_id: str, seconds: float = 60.0) -> None:
    with anyio.fail_after(seconds):
        while True:
            paused = await paused_threads(database)
            checkpoints = await query(
                database, f"SELECT count(*) FROM checkpoints WHERE thread_id = '{thread_id}'"
            )
            if thread_id not in paused and checkpoints == [(0,)]:
                return
            await anyio.sleep(0.1)


async def test_the_server_sweeps_expired_pauses_and_their_answers_conflict(
    database: str, servers: list[Process]
) -> None:
    ttl = timedelta(days=30)
    server = await start(
        servers,
        DEMO,
        database,
        {
            "LGOS_INTERRUPT_TTL_MINUTES": str(int(ttl.total_seconds() // 60)),
            # Sweep every 0.3 s, so the test waits for the server, not for a clock.
            "LGOS_INTERRUPT_SWEEP_INTERVAL_MINUTES": "0.005",
        },
    )
    async with sdk(server) as client:
        old = await client.responses.create(model=APPROVAL, input="the old report")
        old_thread = (await paused_threads(database)).pop()
        young = await client.responses.create(model=APPROVAL, input="the young report")
    young_threads = await paused_threads(database) - {old_thread}
    assert len(young_threads) == 1
    # Age the first pause beyond the TTL, as if it had been abandoned a month ago.
    await query(
        database,
        "UPDATE lgos_paused_runs SET paused_at = now() - interval '31 days' "
        f"WHERE thread_id = '{old_thread}' RETURNING thread_id",
    )

    await wait_until_swept(database, old_thread)

    with pytest.raises(openai.ConflictError) as expired:
        await answer(server, old, "approve")
    assert expired.value.code == "interrupt_state_conflict"
    assert expired.value.response.headers.get("x-should-retry") == "false"

    assert await paused_threads(database) == young_threads
    finished = await answer(server, young, "approve")
    assert finished.output_text == "Published 'the young report'."
    assert "server.interrupt_expiry.deleted" in "\n".join(server.stdout)


async def checkpoint_count(database: str, thread_id: str) -> int:
    rows = await query(
        database, f"SELECT count(*) FROM checkpoints WHERE thread_id = '{thread_id}'"
    )
    return int(str(rows[0][0]))


async def test_a_run_killed_mid_execution_is_swept_after_the_ttl(
    database: str, servers: list[Process]
) -> None:
    """The process dies before the run pauses or finishes: no cleanup ran, yet nothing leaks."""
    server = await start(servers, DEMO, database)
    client = sdk(server)
    # background-interrupt prepares its report for `delay_seconds` before it asks anything.
    running = asyncio.create_task(
        client.responses.create(
            model="background-interrupt",
            input="a report that never gets reviewed",
            metadata={"lgos_settings": json.dumps({"delay_seconds": 300})},
        )
    )
    with anyio.fail_after(60):
        while True:
            threads = await paused_threads(database)
            if threads and await checkpoint_count(database, next(iter(threads))) > 0:
                break
            await anyio.sleep(0.05)
    (thread_id,) = threads
    await anyio.to_thread.run_sync(server.kill)
    with pytest.raises(openai.APIConnectionError):
        await running
    await client.close()

    assert await checkpoint_count(database, thread_id) > 0
    await query(
        database,
        "UPDATE lgos_paused_runs SET paused_at = now() - interval '31 days' "
        f"WHERE thread_id = '{thread_id}' RETURNING thread_id",
    )
    settings = ServerSettings(POSTGRES_URI=database, POSTGRES_POOL_SIZE=2)
    async with open_resources(settings) as resources:
        deleted = await delete_expired_interrupt_runs(
            resources.checkpointer, resources.run_coordinator, older_than=timedelta(days=30)
        )
    assert deleted == 1
    assert await checkpoint_count(database, thread_id) == 0
    assert await paused_threads(database) == set()


@pytest.mark.parametrize("answer_in_background", [False, True], ids=["foreground", "background"])
async def test_a_background_pause_is_answered_after_its_in_memory_engine_restarts(
    database: str, servers: list[Process], answer_in_background: bool
) -> None:
    """The in-memory engine forgets its Responses with its process; the pause lives in
    PostgreSQL, so the question is still answerable by its Response id (what Chainlit does
    after a restart)."""
    in_memory = {"LGOS_BACKGROUND": "memory"}
    first = await start(servers, DEMO, database, in_memory)
    async with sdk(first) as client:
        queued = await client.responses.create(
            model="background-interrupt",
            input="a restart in the middle",
            background=True,
            metadata={"lgos_settings": json.dumps({"delay_seconds": 0})},
        )
        with anyio.fail_after(60):
            paused = queued
            while paused.status in ("queued", "in_progress"):
                await anyio.sleep(0.05)
                paused = await client.responses.retrieve(queued.id)
    call = pending_call(paused)

    await anyio.to_thread.run_sync(first.kill)
    second = await start(servers, DEMO, database, in_memory)
    async with sdk(second) as client:
        finished = await client.responses.create(
            model=paused.model,
            previous_response_id=paused.id,
            input=[{"type": "function_call_output", "call_id": call.call_id, "output": "approve"}],
            background=answer_in_background,
        )
        with anyio.fail_after(60):
            while finished.status in ("queued", "in_progress"):
                await anyio.sleep(0.05)
                finished = await client.responses.retrieve(finished.id)
    assert finished.status == "completed"
    assert "a restart in the middle" in finished.output_text
    assert await paused_threads(database) == set()
