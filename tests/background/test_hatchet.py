"""The Hatchet engine without an engine (none can run here): the real SDK builds our task's
registration and trigger messages and runs its body with `aio_mock_run`; the backend's mapping
is driven by a fake port that raises the SDK's real exception types. The live suite (the same
conformance tests the other engines pass) is `test_conformance.py[hatchet]`, which runs only
when HATCHET_CLIENT_TOKEN is set."""

from __future__ import annotations

import asyncio
import base64
import json
import random
import uuid
from collections import Counter
from datetime import timedelta
from types import SimpleNamespace
from typing import Any

import grpc  # type: ignore[import-untyped]  # the SDK's dependency; no stubs
import httpx2
import pytest
import tenacity
from hatchet_sdk import BulkTriggerIdempotencyCollisionError, Hatchet, IdempotencyCollisionError
from hatchet_sdk.clients.rest.exceptions import (
    NotFoundException,
    RestTransportError,
    ServiceException,
    UnauthorizedException,
)
from langgraph.checkpoint.memory import InMemorySaver

from lgos import (
    ConfigurationError,
    InMemoryRunCoordinator,
)
from lgos.background.executor import DurableRuns, JobExecutor
from lgos.background.memory import InMemoryResponseEventLog
from lgos.core.background import BackgroundJob, BackgroundRun, event_log
from lgos.core.errors import EngineUnavailableError, NotFoundError
from lgos.core.stored_memory import InMemoryResponseStore
from lgos.http.mount import LanggraphOpenaiServe
from lgos.integrations.hatchet import (
    TASK_NAME,
    HatchetBackgroundBackend,
    HatchetJobInput,
    check_engine_version,
    connect,
    create_hatchet_task,
    engine_unavailable,
)
from lgos.service import responses
from lgos.service.background import BackgroundResponses, new_job
from lgos.service.retrieval import ResponseRetrieval
from lgos.service.stateful import StatefulResponses
from lgos.wire import ids, responses_decoder
from tests.background.job_worker import registry

pytestmark = pytest.mark.anyio


def _b64(data: dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(data).encode()).decode().rstrip("=")


@pytest.fixture
def hatchet(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> Hatchet:
    # The client only decodes the token's claims; nothing connects until a call is made.
    claims = {
        "sub": str(uuid.uuid4()),
        "server_url": "http://hatchet.invalid:8080",
        "grpc_broadcast_address": "hatchet.invalid:7070",
    }
    token = f"{_b64({'alg': 'none'})}.{_b64(claims)}.signature"
    monkeypatch.setenv("HATCHET_CLIENT_TOKEN", token)
    monkeypatch.setenv("HATCHET_CLIENT_TLS_STRATEGY", "none")
    monkeypatch.chdir(tmp_path)  # the SDK reads .env files from the working directory
    return Hatchet()


def job(text: str = "Quarterly risks", key: str | None = None) -> BackgroundJob:
    """The job the API would submit for this request (decoded and prepared once)."""
    request = {
        "model": "background-mock",
        "input": text,
        "background": True,
        "metadata": {"lgos_settings": '{"delay_seconds": 0}'},
    }
    decoded = responses_decoder.decode(request)
    prepared = responses.prepare(registry(), decoded, turn=responses.Turn(store=True))
    return new_job(prepared, decoded, owner_scope="default", idempotency_key=key)


async def test_task_body_streams_a_streamed_job_into_the_event_log(hatchet: Hatchet) -> None:
    task = create_hatchet_task(hatchet)
    plain = job()
    streamed = plain.model_copy(update={"stream": True})
    events = InMemoryResponseEventLog()
    output = await task.aio_mock_run(
        input=HatchetJobInput(job=streamed.model_dump(mode="json"), idempotency_key="k"),
        lifespan=JobExecutor(registry=registry(), events=events),
    )
    parsed = ids.parse_run_response_id(output["id"])
    assert parsed is not None
    logged = await events.read(parsed.nonce)
    # The worker starts at 2: the API wrote response.created and response.queued.
    assert logged[0]["type"] == "response.in_progress"
    assert [event["sequence_number"] for event in logged] == list(range(2, 2 + len(logged)))
    assert logged[-1]["type"] == "response.completed"
    # The task's result is the Response the stream ended with.
    assert logged[-1]["response"] == output
    assert output["output"][-1]["content"][0]["text"] == "Background report for: Quarterly risks"


def test_backend_without_postgres_cannot_stream() -> None:
    backend = HatchetBackgroundBackend(SimpleNamespace(), SimpleNamespace())  # type: ignore[arg-type]
    assert event_log(backend) is None


def test_registration_has_sane_timeouts_no_retries_and_ttl_idempotency(hatchet: Hatchet) -> None:
    proto = create_hatchet_task(hatchet).to_proto()
    assert proto.name == TASK_NAME
    [task] = proto.tasks
    assert task.retries == 0
    assert task.timeout == "1h"  # not the SDK's 60 s
    assert task.schedule_timeout == "30m"  # not the SDK's 5 min
    assert proto.idempotency.expression == "input.idempotency_key"
    assert proto.idempotency.ttl_ms == 24 * 3600 * 1000


def test_registration_honours_custom_timeouts(hatchet: Hatchet) -> None:
    task = create_hatchet_task(
        hatchet, execution_timeout=timedelta(hours=2), schedule_timeout=timedelta(minutes=10)
    )
    [proto] = task.to_proto().tasks
    assert (proto.timeout, proto.schedule_timeout) == ("2h", "10m")


def test_trigger_message_carries_the_key_and_the_job(hatchet: Hatchet) -> None:
    task = create_hatchet_task(hatchet)
    the_job = job(key="client-key")
    item = task.create_bulk_run_item(
        input=HatchetJobInput(job=the_job.model_dump(mode="json"), idempotency_key="k" * 64)
    )
    request = hatchet._client.admin._create_workflow_run_request(
        item.workflow_name, item.input, item.options
    )
    assert request.name == TASK_NAME
    sent = json.loads(request.input)
    assert sent["idempotency_key"] == "k" * 64
    assert BackgroundJob.model_validate(sent["job"]) == the_job
    # The client's key itself never leaves the API: only its digest with the scope.
    assert "client-key" not in request.input


@pytest.mark.parametrize("durable", [False, True])
async def test_task_body_returns_the_response(hatchet: Hatchet, durable: bool) -> None:
    task = create_hatchet_task(hatchet)
    the_job = job()
    runs = DurableRuns(InMemorySaver(), InMemoryRunCoordinator()) if durable else None
    output = await task.aio_mock_run(
        input=HatchetJobInput(job=the_job.model_dump(mode="json"), idempotency_key="k"),
        lifespan=JobExecutor(registry=registry(), durable=runs),
    )
    assert output["status"] == "completed"
    assert output["output"][0]["content"][0]["text"] == "Background report for: Quarterly risks"
    assert output["id"].startswith(f"resp_{the_job.run_id}")


async def test_task_body_refuses_a_worker_without_state(hatchet: Hatchet) -> None:
    task = create_hatchet_task(hatchet)
    with pytest.raises(RuntimeError, match="JobExecutor"):
        await task.aio_mock_run(
            input=HatchetJobInput(job=job().model_dump(mode="json"), idempotency_key="k"),
            lifespan={"registry": registry()},
        )


class FakeHatchet:
    """Stands in for the engine behind the two ports; raises what the real SDK raises."""

    def __init__(self) -> None:
        self.runs: dict[str, SimpleNamespace] = {}
        self.keys: dict[str, str] = {}
        self.cancelled: list[str] = []
        # Runs whose REST view says FAILED while the engine tries them again (its task tables
        # hold the next attempt, with this status).
        self.retrying: dict[str, str] = {}
        # Runs the engine's task tables no longer hold (its REST view keeps them longer).
        self.forgotten: set[str] = set()
        self.status_reads = 0
        # How many runs each trigger call asked for, in order.
        self.trigger_calls: list[int] = []
        # Set, the next trigger call waits until it is (creates queue up meanwhile).
        self.hold: asyncio.Event | None = None
        self.entered = asyncio.Event()  # a trigger call began
        self.unreachable_calls = 0  # how many trigger calls find the engine out of reach

    async def _triggered(self, count: int) -> None:
        self.trigger_calls.append(count)
        self.entered.set()
        if self.hold is not None:
            hold, self.hold = self.hold, None
            await hold.wait()
        if self.unreachable_calls:
            self.unreachable_calls -= 1
            raise _rpc_error(grpc.StatusCode.UNAVAILABLE)

    def _create(self, input: HatchetJobInput) -> str:
        run_id = str(uuid.uuid4())
        self.keys[input.idempotency_key] = run_id
        self.runs[run_id] = SimpleNamespace(
            status="QUEUED", input=input.model_dump(mode="json"), output={}
        )
        return run_id

    async def aio_run(
        self, input: HatchetJobInput = ..., options: Any = None, *, wait_for_result: bool = True
    ) -> Any:
        assert wait_for_result is False
        await self._triggered(1)
        if input.idempotency_key in self.keys:
            raise IdempotencyCollisionError(
                existing_run_external_id=self.keys[input.idempotency_key]
            )
        return SimpleNamespace(workflow_run_id=self._create(input))

    def create_bulk_run_item(self, input: HatchetJobInput) -> HatchetJobInput:
        return input

    async def aio_run_many(
        self, workflows: list[HatchetJobInput], *, wait_for_result: bool = True
    ) -> list[Any]:
        # As the engine: the runs whose key is free are created (one per key), the others
        # are refused, and a refusal fails the whole call, naming the created runs by id.
        assert wait_for_result is False
        await self._triggered(len(workflows))
        created, refused = [], []
        for item in workflows:
            if item.idempotency_key in self.keys:
                refused.append(self.keys[item.idempotency_key])
            else:
                created.append(self._create(item))
        if refused:
            raise BulkTriggerIdempotencyCollisionError(
                successful_workflow_run_external_ids=created,
                collisions=[
                    IdempotencyCollisionError(existing_run_external_id=existing)
                    for existing in refused
                ],
            )
        return [SimpleNamespace(workflow_run_id=run_id) for run_id in created]

    async def aio_get(self, workflow_run_id: str) -> Any:
        if workflow_run_id not in self.runs:
            raise NotFoundException(status=404, reason="Not Found")
        return SimpleNamespace(run=self.runs[workflow_run_id])

    async def aio_get_status(self, workflow_run_id: str) -> Any:
        self.status_reads += 1
        if workflow_run_id not in self.runs:
            raise NotFoundException(status=404, reason="Not Found")
        return self.runs[workflow_run_id].status

    async def aio_get_details(self, external_id: str) -> Any:
        if external_id in self.forgotten:
            raise _rpc_error(grpc.StatusCode.NOT_FOUND)
        if external_id in self.retrying:
            return SimpleNamespace(status=self.retrying[external_id], done=False)
        status = self.runs[external_id].status
        return SimpleNamespace(status=status, done=status not in ("QUEUED", "RUNNING"))

    async def aio_cancel(self, run_id: str) -> None:
        self.cancelled.append(run_id)
        run = self.runs[run_id]
        if run.status in ("QUEUED", "RUNNING"):
            run.status = "CANCELLED"


@pytest.fixture
def fake() -> FakeHatchet:
    return FakeHatchet()


@pytest.fixture
def backend(fake: FakeHatchet) -> HatchetBackgroundBackend:
    return HatchetBackgroundBackend(fake, fake)


async def test_submit_then_statuses_map_to_openai(
    fake: FakeHatchet, backend: HatchetBackgroundBackend
) -> None:
    the_job = job()
    run = await backend.submit(the_job)
    assert run.status == "queued"
    assert len(run.id) == 32
    engine_run = fake.runs[str(uuid.UUID(hex=run.id))]
    for hatchet_status, ours in [
        ("QUEUED", "queued"),
        ("RUNNING", "in_progress"),
        ("FAILED", "failed"),
        ("CANCELLED", "cancelled"),
    ]:
        engine_run.status = hatchet_status
        got = await backend.get(run.id)
        assert got is not None
        assert (got.status, got.job) == (ours, the_job)
    response = {"object": "response", "status": "completed", "id": "resp_x"}
    engine_run.status, engine_run.output = "COMPLETED", {TASK_NAME: response}
    done = await backend.get(run.id)
    assert done is not None
    assert (done.status, done.response) == ("completed", response)


@pytest.mark.parametrize(("attempt", "ours"), [("QUEUED", "queued"), ("RUNNING", "in_progress")])
async def test_a_failed_attempt_the_engine_retries_is_not_a_failed_run(
    fake: FakeHatchet, backend: HatchetBackgroundBackend, attempt: str, ours: str
) -> None:
    # What a poll read after a database outage: Hatchet's REST view said FAILED for a run the
    # engine could not send to a worker yet, and then ran it; the poll answered `failed`.
    run = await backend.submit(job())
    engine_id = str(uuid.UUID(hex=run.id))
    fake.runs[engine_id].status = "FAILED"
    fake.retrying[engine_id] = attempt
    seen = await backend.get(run.id)
    assert seen is not None
    assert seen.status == ours
    del fake.retrying[engine_id]  # the engine gave up: the run failed
    failed = await backend.get(run.id)
    assert failed is not None
    assert failed.status == "failed"
    fake.forgotten.add(engine_id)
    still_failed = await backend.get(run.id)
    assert still_failed is not None
    assert still_failed.status == "failed"


async def test_idempotency_collision_returns_the_existing_run(
    fake: FakeHatchet, backend: HatchetBackgroundBackend
) -> None:
    first = await backend.submit(job(key="same"))
    second = await backend.submit(job(key="same"))
    assert second.id == first.id
    assert second.job == first.job  # the stored job, so the API can compare bodies
    assert len(fake.runs) == 1


async def test_runs_without_a_key_never_collide(
    fake: FakeHatchet, backend: HatchetBackgroundBackend
) -> None:
    first = await backend.submit(job())
    second = await backend.submit(job())
    assert first.id != second.id
    keys = [HatchetJobInput.model_validate(run.input).idempotency_key for run in fake.runs.values()]
    assert all(isinstance(key, str) and key for key in keys)


async def _until_queued(backend: HatchetBackgroundBackend, count: int) -> None:
    """Until `count` creates wait behind the trigger on its way: turns of the event loop (each
    create queues in its first turn), never a time."""
    while len(backend.trigger._waiting) < count:  # noqa: ASYNC110 (no event to wait on)
        await asyncio.sleep(0)


async def _behind_a_held_trigger(
    fake: FakeHatchet, backend: HatchetBackgroundBackend, jobs: list[BackgroundJob]
) -> tuple[asyncio.Event, asyncio.Task[BackgroundRun], list[asyncio.Task[BackgroundRun]]]:
    """A create whose trigger the engine holds until the event is set, and creates of `jobs`
    made meanwhile, queued behind it."""
    hold = fake.hold = asyncio.Event()
    first = asyncio.create_task(backend.submit(job("first")))
    await fake.entered.wait()
    later = [asyncio.create_task(backend.submit(each)) for each in jobs]
    await _until_queued(backend, len(jobs))
    return hold, first, later


async def test_creates_made_while_a_trigger_is_on_its_way_go_in_one_call(
    fake: FakeHatchet, backend: HatchetBackgroundBackend
) -> None:
    jobs = [job(f"report {index}") for index in range(5)]
    hold, first, later = await _behind_a_held_trigger(fake, backend, jobs)
    hold.set()
    runs = [await task for task in later]
    assert fake.trigger_calls == [1, 5]
    assert len({(await first).id, *(run.id for run in runs)}) == 6
    # Each create got the run the engine made for its own job, not a neighbour's.
    for submitted, run in zip(jobs, runs, strict=True):
        engine_input = fake.runs[str(uuid.UUID(hex=run.id))].input
        assert BackgroundJob.model_validate(engine_input["job"]) == submitted == run.job
    # A lone create afterwards is sent at once, alone.
    await backend.submit(job("alone"))
    assert fake.trigger_calls == [1, 5, 1]


async def test_a_batch_with_a_claimed_key_answers_each_create_with_its_keys_run(
    fake: FakeHatchet, backend: HatchetBackgroundBackend
) -> None:
    earlier = await backend.submit(job(key="retried"))
    jobs = [job(key="retried"), job(key="twice"), job(), job(key="twice"), job()]
    hold, first, later = await _behind_a_held_trigger(fake, backend, jobs)
    hold.set()
    await first
    runs = [await task for task in later]
    assert runs[0].id == earlier.id  # a client's retry names its first run
    assert runs[1].id == runs[3].id  # two creates with one key in one batch: one run
    assert len({earlier.id, runs[1].id, runs[2].id, runs[4].id}) == 4
    # earlier, first, and from the batch: "twice" and the two without a key.
    assert len(fake.runs) == 5


async def test_an_engine_error_fails_its_batch_and_not_the_next(
    fake: FakeHatchet, backend: HatchetBackgroundBackend
) -> None:
    fake.unreachable_calls = 2  # the first create's call and the batch's
    jobs = [job(f"report {index}") for index in range(3)]
    hold, first, later = await _behind_a_held_trigger(fake, backend, jobs)
    hold.set()
    for task in [first, *later]:
        with pytest.raises(EngineUnavailableError):
            await task
    assert fake.trigger_calls == [1, 3]
    assert fake.runs == {}
    assert (await backend.submit(job("after"))).status == "queued"


async def test_a_create_cancelled_before_its_trigger_is_sent_is_not_sent(
    fake: FakeHatchet, backend: HatchetBackgroundBackend
) -> None:
    jobs = [job("kept"), job("left")]
    hold, first, (kept, left) = await _behind_a_held_trigger(fake, backend, jobs)
    left.cancel()  # its client went away while the first trigger was on its way
    hold.set()
    await first
    assert (await kept).job == jobs[0]
    assert left.cancelled()
    assert fake.trigger_calls == [1, 1]
    assert len(fake.runs) == 2


async def test_unknown_and_foreign_ids_are_none(
    fake: FakeHatchet, backend: HatchetBackgroundBackend
) -> None:
    assert await backend.get(uuid.uuid4().hex) is None
    foreign = str(uuid.uuid4())
    fake.runs[foreign] = SimpleNamespace(status="COMPLETED", input={"other": 1}, output={})
    assert await backend.get(uuid.UUID(foreign).hex) is None


async def test_cancel_goes_to_the_engine(
    fake: FakeHatchet, backend: HatchetBackgroundBackend
) -> None:
    run = await backend.submit(job())
    await backend.cancel(run.id)
    assert fake.cancelled == [str(uuid.UUID(hex=run.id))]
    cancelled = await backend.get(run.id)
    assert cancelled is not None
    assert cancelled.status == "cancelled"


class CountedViews(FakeHatchet):
    """Counts the reads of runs' whole REST view."""

    def __init__(self) -> None:
        super().__init__()
        self.view_reads = 0

    async def aio_get(self, workflow_run_id: str) -> Any:
        self.view_reads += 1
        return await super().aio_get(workflow_run_id)


async def test_a_known_run_is_read_again_by_its_status_alone() -> None:
    # The polls' background reads (`RecentRuns`) hold the job: the engine's whole view of the
    # run (five queries, the input and output) is read only when its status will not do.
    engine = CountedViews()
    backend = HatchetBackgroundBackend(engine, engine)
    known = await backend.submit(job())
    engine_run = engine.runs[str(uuid.UUID(hex=known.id))]
    for hatchet_status, ours in [
        ("QUEUED", "queued"),
        ("RUNNING", "in_progress"),
        ("CANCELLED", "cancelled"),
        ("FAILED", "failed"),
    ]:
        engine_run.status = hatchet_status
        got = await backend.get(known.id, known=known)
        assert got is not None
        assert (got.status, got.job, got.response) == (ours, known.job, None)
    assert (engine.status_reads, engine.view_reads) == (4, 0)
    # A failure the engine is still retrying is no failure, as on a whole read.
    engine.retrying[str(uuid.UUID(hex=known.id))] = "RUNNING"
    retried = await backend.get(known.id, known=known)
    assert retried is not None
    assert retried.status == "in_progress"
    # A completed run's Response is its output: the whole view is read.
    response = {"object": "response", "status": "completed", "id": "resp_x"}
    engine_run.status, engine_run.output = "COMPLETED", {TASK_NAME: response}
    done = await backend.get(known.id, known=known)
    assert done is not None
    assert (done.status, done.response, engine.view_reads) == ("completed", response, 1)


async def test_a_known_run_the_view_does_not_show_yet_stays_as_known(
    fake: FakeHatchet, backend: HatchetBackgroundBackend
) -> None:
    known = await backend.submit(job())
    del fake.runs[str(uuid.UUID(hex=known.id))]  # the REST view lags the trigger
    assert await backend.get(known.id, known=known) == known


class LaggingView(FakeHatchet):
    """An engine whose REST view shows each run only from its `lag + 1`-th read on (Hatchet's
    shows a new run some milliseconds after its trigger): the reads before are the SDK's 404."""

    def __init__(self, lag: int) -> None:
        super().__init__()
        self.lag = lag
        self.reads: Counter[str] = Counter()

    async def aio_get(self, workflow_run_id: str) -> Any:
        self.reads[workflow_run_id] += 1
        if self.reads[workflow_run_id] <= self.lag:
            raise NotFoundException(status=404, reason="Not Found")
        return await super().aio_get(workflow_run_id)

    def reads_of(self, run_id: str) -> int:
        return self.reads[str(uuid.UUID(hex=run_id))]


async def test_a_run_known_to_exist_is_read_until_the_view_shows_it() -> None:
    lagging = LaggingView(lag=3)
    backend = HatchetBackgroundBackend(lagging, lagging)
    run = await backend.submit(job())
    # Not known to exist: read once, and the view's 404 is the answer.
    assert await backend.get(run.id) is None
    assert lagging.reads_of(run.id) == 1
    found = await backend.get(run.id, exists=True)
    assert found is not None
    assert (found.id, found.job) == (run.id, run.job)
    assert lagging.reads_of(run.id) == 4


async def test_a_retried_create_finds_the_run_the_engine_names_before_its_view_shows_it() -> None:
    lagging = LaggingView(lag=3)
    backend = HatchetBackgroundBackend(lagging, lagging)
    first = await backend.submit(job(key="same"))
    # The engine refuses the key and names the run, which its view does not show yet.
    again = await backend.submit(job(key="same"))
    assert (again.id, again.job) == (first.id, first.job)


async def test_a_run_the_view_never_shows_is_none_at_the_bound() -> None:
    lagging = LaggingView(lag=10**6)
    backend = HatchetBackgroundBackend(lagging, lagging, call_timeout=0.3)
    run = await backend.submit(job())
    assert await backend.get(run.id, exists=True) is None
    assert lagging.reads_of(run.id) > 1  # it read again before the bound


async def test_polls_wait_for_runs_the_store_indexes_and_not_for_unknown_ids() -> None:
    lagging = LaggingView(lag=3)
    backend = HatchetBackgroundBackend(lagging, lagging)
    stateful = StatefulResponses(InMemoryResponseStore(), registry(), backend)
    background = BackgroundResponses(registry(), backend, stateful)
    retrieval = ResponseRetrieval(stateful, background)  # GET /v1/responses/{id}
    body = {"model": "background-mock", "input": "x", "background": True}

    async def create() -> str:
        decoded = responses_decoder.decode(body)
        created = await background.create(decoded, owner_scope="default", idempotency_key=None)
        return str(created["id"])

    # A poll right after the create, which the view does not show yet.
    polled = await create()
    assert (await retrieval.retrieve(polled, "default"))["id"] == polled
    # An agent protocol's task, read without looking in the store first.
    task = await create()
    assert (await background.retrieve(task, owner_scope="default"))["id"] == task
    # An id nobody created: one read, then the 404.
    unknown = str(ids.RunResponseId(ids.new_hex(), uuid.uuid4().hex))
    with pytest.raises(NotFoundError):
        await retrieval.retrieve(unknown, "default")
    parsed = ids.parse_run_response_id(unknown)
    assert parsed is not None
    assert lagging.reads_of(parsed.nonce) == 1


def test_the_apis_reads_retry_quickly_with_the_sdks_settings(
    hatchet: Hatchet, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HATCHET_CLIENT_NAMESPACE", "Reports")
    monkeypatch.setenv("HATCHET_CLIENT_TENACITY_MAX_ATTEMPTS", "6")
    config = connect(quick_retries=True).runs.client_config
    # HATCHET_CLIENT_* as the SDK reads them (the fixture's token and TLS strategy).
    assert config.token == hatchet.config.token
    assert (config.host_port, config.tls_config.strategy) == ("hatchet.invalid:7070", "none")
    assert config.namespace == "reports_"
    assert config.tenacity.max_attempts == 6

    def longest_wait(config: Any) -> float:
        """The most the SDK waits in all between its attempts at a call (jitter at its top)."""
        wait = config.tenacity.wait()  # as the SDK builds it
        state = tenacity.RetryCallState(retry_object=None, fn=None, args=(), kwargs={})
        total = 0.0
        for attempt in range(1, config.tenacity.max_attempts):
            state.attempt_number = attempt
            total += wait(state)
        return float(total)

    monkeypatch.setattr(random, "uniform", lambda low, high: high)
    assert longest_wait(config) < 1.0
    # Triggers keep the SDK's own back-off (1, 2, 4, 8 s and jitter: ~17 s before a 404).
    assert longest_wait(connect().runs.client_config) > 10


@pytest.mark.parametrize("version", [None, "v0.80.0", "v0.98.8", "garbage"])
async def test_engines_without_idempotency_keys_are_refused(version: str | None) -> None:
    async def engine_version() -> str | None:
        return version

    with pytest.raises(ConfigurationError, match="idempotency"):
        await check_engine_version(SimpleNamespace(aio_get_engine_version=engine_version))  # type: ignore[arg-type]


@pytest.mark.parametrize("version", ["v0.98.9", "v0.112.3", "1.2.0"])
async def test_recent_engines_are_accepted(version: str) -> None:
    async def engine_version() -> str | None:
        return version

    assert (
        await check_engine_version(SimpleNamespace(aio_get_engine_version=engine_version))
        == version
    )  # type: ignore[arg-type]


async def test_api_refuses_background_streams_without_an_event_log(
    fake: FakeHatchet, backend: HatchetBackgroundBackend
) -> None:
    app = LanggraphOpenaiServe(registry(), background=backend).bind_openai_api().app
    body = {"model": "background-mock", "input": "x", "background": True}
    async with httpx2.AsyncClient(
        transport=httpx2.ASGITransport(app=app), base_url="http://t"
    ) as http:
        refused = await http.post("/v1/responses", json={**body, "stream": True})
        assert refused.status_code == 400
        assert refused.json()["error"]["param"] == "stream"
        assert fake.runs == {}  # nothing was queued
        accepted = await http.post("/v1/responses", json=body)
        assert accepted.status_code == 200
        replay = await http.get(f"/v1/responses/{accepted.json()['id']}?stream=true")
        assert replay.status_code == 400
        assert replay.json()["error"]["param"] == "stream"


def _rpc_error(code: grpc.StatusCode) -> grpc.aio.AioRpcError:
    return grpc.aio.AioRpcError(code, grpc.aio.Metadata(), grpc.aio.Metadata(), details="")


@pytest.mark.parametrize(
    "error",
    [
        TimeoutError(),
        RestTransportError(reason="connection refused"),
        _rpc_error(grpc.StatusCode.UNAVAILABLE),
        # What the engine answers while its own database is away (the token was checked at
        # start-up).
        _rpc_error(grpc.StatusCode.UNAUTHENTICATED),
    ],
)
def test_an_engine_out_of_reach_is_unavailable(error: BaseException) -> None:
    assert engine_unavailable(error)


@pytest.mark.parametrize(
    "error",
    [
        # The engine's own answers about the call: an unknown id, a cancel of a finished run.
        NotFoundException(status=404, reason="not found"),
        ServiceException(status=500, reason="internal"),
        UnauthorizedException(status=401, reason="unauthorized"),
        _rpc_error(grpc.StatusCode.NOT_FOUND),
        _rpc_error(grpc.StatusCode.UNKNOWN),
        _rpc_error(grpc.StatusCode.INTERNAL),
        ValueError("not a run id"),
    ],
)
def test_the_engines_answers_stay_what_they_were(error: BaseException) -> None:
    assert not engine_unavailable(error)


class WorkerOnWait(InMemoryResponseEventLog):
    """A log whose run's worker logs its start and end when a reader first waits for them."""

    def __init__(self) -> None:
        super().__init__()
        self.worker_events: list[dict[str, Any]] = []

    async def wait(self, run_id: str, after: int, patience: float) -> None:
        if self.worker_events:
            await self.append(run_id, self.worker_events)
            self.worker_events = []
        await super().wait(run_id, after, patience)


@pytest.mark.timeout(30)
async def test_a_stream_of_a_run_that_ends_at_once_reads_nothing_from_the_engine() -> None:
    # The stream's tail follows the log, where this engine's workers log every end: asking
    # the engine at the start (its whole view, five queries) told it nothing the log does not.
    engine = CountedViews()
    events = WorkerOnWait()
    backend = HatchetBackgroundBackend(engine, engine, events=events)
    background = BackgroundResponses(registry(), backend)
    body = {"model": "background-mock", "input": "x", "background": True, "stream": True}
    decoded = responses_decoder.decode(body)
    stream = await background.create_stream(decoded, owner_scope="default", idempotency_key=None)
    first = await anext(stream)
    assert first["type"] == "response.created"
    # The worker's start and end, as `lgos worker` logs them, once the tail waits for them.
    started = {**first["response"], "status": "in_progress"}
    ended = {**first["response"], "status": "completed"}
    events.worker_events = [
        {"type": "response.in_progress", "sequence_number": 2, "response": started},
        {"type": "response.completed", "sequence_number": 3, "response": ended},
    ]
    kinds = [event["type"] async for event in stream]
    assert kinds[-2:] == ["response.in_progress", "response.completed"]
    assert not events.worker_events  # the tail waited for them
    assert (engine.view_reads, engine.status_reads) == (0, 0)
