"""The job: a background request is decoded and prepared once, by the API, and the job it
becomes is all an engine stores and all a worker and a poll read."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from langgraph.checkpoint.memory import InMemorySaver

from demo.graphs.review import DelaySettings, background_interrupt_graph
from lgos import (
    BackgroundBackend,
    GraphConfig,
    GraphFeature,
    GraphRegistry,
    InMemoryBackgroundBackend,
    InMemoryRunCoordinator,
)
from lgos.background.executor import execute_background_job
from lgos.core.background import (
    LEGACY_JOB_MESSAGE,
    BackgroundJob,
    BackgroundRun,
    LegacyJob,
    logged_end,
)
from lgos.core.event_log import InMemoryResponseEventLog
from lgos.core.job import PreparedJob
from lgos.integrations.dbos import DBOSBackgroundBackend
from lgos.integrations.hatchet import HatchetBackgroundBackend
from lgos.service import background, responses
from lgos.wire import ids, responses_decoder
from lgos.wire.interrupts import interrupt_call_id
from tests.background import job_worker

pytestmark = pytest.mark.anyio

ROOT = Path(__file__).resolve().parents[2]
WORKER_SECONDS = 120


def submitted(request: dict[str, Any], registry: GraphRegistry) -> BackgroundJob:
    """The job the API submits for `request`, as an engine stores it (JSON)."""
    decoded = responses_decoder.decode(request)
    prepared = responses.prepare(registry, decoded, turn=responses.Turn(store=True))
    job = background.new_job(prepared, decoded, owner_scope="default")
    return BackgroundJob.model_validate_json(job.model_dump_json())


@pytest.mark.parametrize("stream", [False, True])
def test_a_worker_runs_a_job_without_the_request_decoders(stream: bool) -> None:
    request = {
        "model": "background-mock",
        "input": "Quarterly risks",
        "background": True,
        "stream": stream,
        "metadata": {"lgos_settings": '{"delay_seconds": 0}'},
    }
    job = submitted(request, job_worker.registry())
    engine_run_id = ids.new_hex()
    finished = subprocess.run(
        [sys.executable, "-m", "tests.background.job_worker", engine_run_id],
        input=job.model_dump_json(),
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=WORKER_SECONDS,
        check=False,
    )
    assert finished.returncode == 0, finished.stderr
    report = json.loads(finished.stdout)
    response = report["response"]
    assert response["status"] == "completed", response
    assert response["id"] == str(ids.RunResponseId(job.run_id, engine_run_id))
    assert response["output"][-1]["content"][0]["text"] == "Background report for: Quarterly risks"
    assert response["created_at"] == job.created_at
    assert response["metadata"] == request["metadata"]
    if stream:
        assert report["events"][-1] == {**report["events"][-1], "type": "response.completed"}
        assert report["events"][-1]["response"] == response
    # The worker ran the job the API prepared: it never imported a decoder.
    assert report["decoders"] == []


def interrupt_registry() -> GraphRegistry:
    return GraphRegistry(
        graphs={
            "background-interrupt": GraphConfig(
                graph=background_interrupt_graph(InMemorySaver()),
                description="Prepares a report for review.",
                features=frozenset({GraphFeature.BACKGROUND, GraphFeature.INTERRUPTS}),
                client_settings=DelaySettings,
            )
        },
        run_coordinator=InMemoryRunCoordinator(),
    )


@pytest.mark.parametrize("answering", [False, True])
def test_the_stored_job_is_the_request_the_api_prepared(answering: bool) -> None:
    registry = interrupt_registry()
    run_id = ids.new_hex()
    call_id = interrupt_call_id(run_id, ids.new_hex())
    answer = [{"type": "function_call_output", "call_id": call_id, "output": "approve"}]
    request = {
        "model": "background-interrupt",
        "input": answer if answering else "Quarterly risks",
        "background": True,
        "metadata": {"lgos_settings": '{"delay_seconds": 0}', "team": "risk"},
        "tools": [
            {
                "type": "function",
                "name": "lookup",
                "description": "Looks a figure up.",
                "parameters": {"type": "object", "properties": {"q": {"type": "string"}}},
                "strict": True,
            }
        ],
        "tool_choice": {"type": "function", "name": "lookup"},
        "user": "analyst-7",
    }
    if answering:
        request["previous_response_id"] = str(ids.run_response_id(run_id))
    else:
        request["instructions"] = "Be brief."
    history = [
        {"type": "message", "role": "user", "content": "Earlier question"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "Earlier answer", "annotations": []}],
        },
    ]
    decoded = responses_decoder.decode(request).with_history(history)
    turn = responses.Turn(store=True, history=tuple(history))
    prepared = responses.prepare(registry, decoded, turn=turn)
    job = background.new_job(prepared, decoded, owner_scope="default")
    stored = BackgroundJob.model_validate(json.loads(job.model_dump_json()))
    assert isinstance(stored.prepared, PreparedJob)
    # An engine's copy reads back as the same job (how create tells its new run from a run
    # an idempotency key found).
    assert stored.model_dump(mode="json") == job.model_dump(mode="json")

    ran = responses.from_job(
        registry, stored.prepared, response_id=prepared.echo.id, run_id=stored.run_id
    )
    assert ran.request == prepared.request
    assert ran.plan == prepared.plan
    assert ran.echo == prepared.echo
    assert (ran.plan.resume is not None) == answering
    if answering:
        return  # a resume sends the answers, and the run has the rest
    # The history reached the job as the graph's messages (after the instructions).
    texts = [message.text for message in ran.request.messages]
    assert texts[texts.index("Earlier question") :][:2] == [
        "Earlier question",
        "Earlier answer",
    ]


# A job as LGOS stored it before job format 2: the raw request body and a hand-made echo.
LEGACY_BODY = {
    "model": "background-interrupt",
    "input": "Quarterly risks",
    "background": True,
    "metadata": {"team": "risk"},
}
LEGACY_JOB = {
    "request": LEGACY_BODY,
    "owner_scope": "default",
    "run_id": "a" * 32,
    "created_at": 1_700_000_000,
    "idempotency_key": None,
    "request_digest": "d" * 64,
    "trace_context": {},
    "request_id": "req_1",
    "stream": False,
    "echo": {
        "model": "background-interrupt",
        "instructions": None,
        "metadata": {"team": "risk"},
        "tools": [],
        "tool_choice": "auto",
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "background": True,
        "store": True,
        "user": None,
        "conversation": None,
        "created_at": 1_700_000_000,
    },
    "history": [],
    "replay_from": 0,
    "checkpoint_id": None,
}


@pytest.mark.parametrize("with_echo", [True, False])
async def test_a_legacy_job_still_polls_and_fails_with_a_clear_message(with_echo: bool) -> None:
    stored = dict(LEGACY_JOB) if with_echo else {**LEGACY_JOB, "echo": {}}
    job = BackgroundJob.model_validate(stored)
    assert isinstance(job.prepared, LegacyJob)
    engine_run_id = "b" * 32
    queued = background.snapshot(BackgroundRun(id=engine_run_id, job=job, status="queued"))
    assert queued["status"] == "queued"
    assert queued["id"] == str(ids.RunResponseId(job.run_id, engine_run_id))
    assert (queued["model"], queued["metadata"]) == ("background-interrupt", {"team": "risk"})
    assert queued["created_at"] == 1_700_000_000

    response = await execute_background_job(job, engine_run_id, interrupt_registry())
    assert response["status"] == "failed"
    assert response["error"]["message"] == LEGACY_JOB_MESSAGE
    assert response["id"] == queued["id"]
    # Once the engine holds that result, a poll shows it.
    ended = BackgroundRun(id=engine_run_id, job=job, status="completed").with_output(response)
    assert background.snapshot(ended) == response


def test_every_engine_declares_what_it_supports() -> None:
    log = InMemoryResponseEventLog()
    memory = InMemoryBackgroundBackend(interrupt_registry())
    dbos = DBOSBackgroundBackend(SimpleNamespace(), log)  # type: ignore[arg-type]
    dbos_alone = DBOSBackgroundBackend(SimpleNamespace())  # type: ignore[arg-type]
    hatchet = HatchetBackgroundBackend(SimpleNamespace(), SimpleNamespace(), events=log)  # type: ignore[arg-type]
    engines: dict[str, BackgroundBackend] = {
        "memory": memory,
        "dbos": dbos,
        "dbos without a log": dbos_alone,
        "hatchet": hatchet,
    }
    declared = {
        name: (engine.events is not None, engine.results_in_log) for name, engine in engines.items()
    }
    assert all(isinstance(engine, BackgroundBackend) for engine in engines.values())
    assert declared == {
        "memory": (True, False),
        "dbos": (True, False),
        "dbos without a log": (False, False),
        "hatchet": (True, True),
    }


async def test_an_end_in_the_log_is_the_end_on_every_durable_engine() -> None:
    # `lgos worker` logs every run's end before its engine records it and before it sends the
    # run's webhooks: a client told by a webhook (or a poll racing the engine) finds the end,
    # on DBOS too, whose webhook used to arrive while its poll still said `in_progress`.
    job = submitted(
        {"model": "background-mock", "input": "Quarterly risks", "background": True},
        job_worker.registry(),
    )
    log = InMemoryResponseEventLog()
    engines: dict[str, BackgroundBackend] = {
        "dbos": DBOSBackgroundBackend(SimpleNamespace(), log),  # type: ignore[arg-type]
        "hatchet": HatchetBackgroundBackend(SimpleNamespace(), SimpleNamespace(), events=log),  # type: ignore[arg-type]
    }
    for name, engine in engines.items():
        run = BackgroundRun(id=ids.new_hex(), job=job, status="in_progress")
        ended = background.snapshot(run.model_copy(update={"status": "failed"}))
        assert await logged_end(run, engine) is None, name
        await log.append(
            run.id, [{"type": "response.failed", "sequence_number": 3, "response": ended}]
        )
        assert await logged_end(run, engine) == ended, name
        assert await logged_end(run.model_copy(update={"status": "cancelled"}), engine) is None


class _EngineStillRunning:
    """An engine that still reports a run in progress whose end a worker has logged, and
    records any cancel it is asked for (the moment between the two writes)."""

    results_in_log = False

    def __init__(self, run: BackgroundRun, events: InMemoryResponseEventLog) -> None:
        self.run = run
        self.events = events
        self.cancelled: list[str] = []

    async def get(self, run_id: str, *, exists: bool = False) -> BackgroundRun | None:
        return self.run if run_id == self.run.id else None

    async def cancel(self, run_id: str) -> None:
        self.cancelled.append(run_id)
        self.run = self.run.model_copy(update={"status": "cancelled"})


async def test_cancelling_a_run_whose_end_is_logged_returns_that_end() -> None:
    # CI saw it on DBOS: a poll showed `completed` (from the log), then a cancel read the
    # engine's `pending` and cancelled the finished run, answering `cancelled`.
    job = submitted(
        {"model": "background-mock", "input": "Quarterly risks", "background": True},
        job_worker.registry(),
    )
    log = InMemoryResponseEventLog()
    run = BackgroundRun(id=ids.new_hex(), job=job, status="in_progress")
    done = {**background.snapshot(run), "status": "completed"}
    await log.append(
        run.id, [{"type": "response.completed", "sequence_number": 3, "response": done}]
    )
    engine = _EngineStillRunning(run, log)
    service = background.BackgroundResponses(job_worker.registry(), engine)  # type: ignore[arg-type]

    answer = await service.cancel(background.response_id(run), owner_scope="default")

    assert answer["status"] == "completed"
    assert answer == done
    assert engine.cancelled == []
