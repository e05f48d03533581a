"""Real deployments for the background tests: `lgos serve` and `lgos worker` processes on one
throwaway PostgreSQL database, serving `tests.background.registry`.

Each engine's deployment starts once for this package and is shared by the tests that use it;
it stops when the package's last test ends, so its processes and connections do not outlive it.
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any

import anyio
import psycopg
import pytest
from openai import AsyncOpenAI

from lgos.wire.ids import parse_run_response_id
from tests.support.postgres import temporary_database
from tests.support.processes import START_TIMEOUT, Process, clean_environment, lgos

REGISTRY = "tests.background.registry:create_registry"
WORKER_SLOTS = 2


def spawn(command: str, env: dict[str, str], *args: str, own_group: bool = False) -> Process:
    return lgos(command, REGISTRY, *args, env=env, own_group=own_group)


def is_message(name: str) -> Any:
    return lambda record: record.get("message") == name


class Deployment:
    """API and worker processes of one engine, the database they share, and SDK clients."""

    def __init__(
        self,
        engine: str,
        uri: str,
        *,
        apis: int,
        workers: int,
        extra_env: dict[str, str] | None = None,
        worker_groups: bool = False,
        start_timeout: float = START_TIMEOUT,
    ) -> None:
        """`worker_groups`: each worker leads a process group of its own (with the children
        an engine's SDK starts), which a test can freeze as a whole (`os.killpg`).
        `start_timeout`: how long each process may take to serve or run."""
        self.engine = engine
        self.start_timeout = start_timeout
        self.uri = uri
        self.env = clean_environment(
            **(extra_env or {}),
            LGOS_POSTGRES_URI=uri,
            LGOS_BACKGROUND=engine,
            LGOS_WORKER_SLOTS=str(WORKER_SLOTS),
            LGOS_WORKER_RECOVERY_INTERVAL_SECONDS="0.5",
            LGOS_WORKER_SHUTDOWN_GRACE_SECONDS="1",
            # Short, so a killed worker's runs move on quickly; long enough for a busy machine.
            LGOS_WORKER_LEASE_SECONDS="6",
            LGOS_INTERRUPT_SWEEP_INTERVAL_MINUTES="0",
            PYTHONUNBUFFERED="1",
        )
        self.apis: list[Process] = []
        self.workers: dict[str, Process] = {}
        self._clients: dict[int, AsyncOpenAI] = {}
        self._api_count = apis
        # Ids per engine: the DBOS and Hatchet deployments share one database, and a live
        # worker's id is its lease in `lgos_workers` (a second worker with it is refused).
        self._worker_ids = [f"test-{engine}-worker-{index}" for index in range(workers)]
        self._worker_groups = worker_groups

    @property
    def slots(self) -> int:
        """How many runs can execute at once (the in-memory engine has no limit)."""
        return WORKER_SLOTS * len(self._worker_ids) if self._worker_ids else 0

    def start(self) -> None:
        self.apis = [spawn("serve", self.env, "--port", "0") for _ in range(self._api_count)]
        self.ensure_workers()
        for api in self.apis:
            api.wait_until_serving(timeout=self.start_timeout)

    def ensure_running(self) -> None:
        """(Re)start any API or worker a test killed, and wait until all serve and run."""
        for index, api in enumerate(self.apis):
            if not api.alive():
                api.stop()
                self._clients.pop(index, None)
                self.apis[index] = spawn("serve", self.env, "--port", "0")
        self.ensure_workers()
        for api in self.apis:
            api.wait_until_serving(timeout=self.start_timeout)

    def ensure_workers(self) -> None:
        """(Re)start any worker that is not running, and wait until all run."""
        for worker_id in self._worker_ids:
            current = self.workers.get(worker_id)
            if current is None or current.process.poll() is not None:
                self.workers[worker_id] = spawn(
                    "worker",
                    {**self.env, "LGOS_WORKER_ID": worker_id},
                    own_group=self._worker_groups,
                )
        for worker in self.workers.values():
            worker.wait_for_record(is_message("worker.started"), timeout=self.start_timeout)

    def worker_with_pid(self, pid: int) -> Process:
        for worker in self.workers.values():
            if worker.process.pid == pid:
                return worker
        raise AssertionError(f"process {pid} is not one of this deployment's workers")

    def stop(self) -> None:
        for process in [*self.apis, *self.workers.values()]:
            if process.process.poll() is None:
                process.process.send_signal(signal.SIGTERM)
        for process in [*self.apis, *self.workers.values()]:
            process.stop()

    def sdk(self, index: int = 0) -> AsyncOpenAI:
        """The SDK in strict mode on API `index` (one client per API, closed after each test)."""
        index %= len(self.apis)
        if index not in self._clients:
            self._clients[index] = AsyncOpenAI(
                base_url=f"{self.apis[index].base_url}/v1",
                api_key="test",
                _strict_response_validation=True,
                max_retries=0,
            )
        return self._clients[index]

    async def close_clients(self) -> None:
        clients, self._clients = list(self._clients.values()), {}
        # Bounded: a connection left mid-stream by a failed test must fail this teardown, not
        # hang the whole run (a hang here outlived pytest-timeout once, on a loaded machine).
        with anyio.fail_after(60):
            for client in clients:
                await client.close()

    # The test's side of tests.background.registry's gates and step records.

    async def open_gate(self, topic: str) -> None:
        async with await psycopg.AsyncConnection.connect(self.uri, autocommit=True) as conn:
            await conn.execute(
                "INSERT INTO bg_test_gates (topic) VALUES (%s) ON CONFLICT DO NOTHING", (topic,)
            )

    async def logged_events(self, response_id: str) -> int:
        """How many events of this Response the database still holds (under its id or its
        engine run id)."""
        parsed = parse_run_response_id(response_id)
        keys = [response_id, parsed.nonce] if parsed else [response_id]
        async with await psycopg.AsyncConnection.connect(self.uri, autocommit=True) as conn:
            cursor = await conn.execute(
                "SELECT count(*) FROM lgos_response_events WHERE run_id = ANY(%s)", (keys,)
            )
            row = await cursor.fetchone()
            return int(row[0]) if row else 0

    async def expire_response(self, response_id: str) -> int:
        """Make a stored Response older than the retention and run the API's retention sweep
        on the database (`expire_stored_responses`, the default 30 days); how many went."""
        from datetime import timedelta

        from psycopg_pool import AsyncConnectionPool

        from lgos.integrations.postgres.stored import PostgresResponseStore
        from lgos.run.expiry import expire_stored_responses

        async with await psycopg.AsyncConnection.connect(self.uri, autocommit=True) as conn:
            await conn.execute(
                "UPDATE lgos_responses SET created_at = created_at - 31 * 86400 WHERE id = %s",
                (response_id,),
            )
        async with AsyncConnectionPool(
            self.uri, min_size=1, max_size=1, kwargs={"autocommit": True}, open=False
        ) as pool:
            store = PostgresResponseStore(pool)
            return await expire_stored_responses(store, None, older_than=timedelta(days=30))

    async def steps(self, topic: str) -> list[tuple[str, str, int]]:
        """(step, event, pid) rows of one topic, in the order they happened."""
        async with await psycopg.AsyncConnection.connect(self.uri, autocommit=True) as conn:
            cursor = await conn.execute(
                "SELECT step, event, pid FROM bg_test_steps WHERE topic = %s ORDER BY at",
                (topic,),
            )
            return [(str(row[0]), str(row[1]), int(row[2])) for row in await cursor.fetchall()]


@pytest.fixture(scope="package")
def bg_database() -> Iterator[str]:
    with temporary_database("lgos_test_bg") as uri:
        yield uri


@contextmanager
def running(deployment: Deployment) -> Iterator[Deployment]:
    """`deployment` started (a start that fails stops what did start), stopped after the block."""
    try:
        deployment.start()
        yield deployment
    finally:
        deployment.stop()


def _deployment(
    engine: str, uri: str, apis: int, workers: int, extra_env: dict[str, str] | None = None
) -> Iterator[Deployment]:
    with running(Deployment(engine, uri, apis=apis, workers=workers, extra_env=extra_env)) as up:
        yield up


@pytest.fixture(scope="package")
def memory_deployment(bg_database: str) -> Iterator[Deployment]:
    yield from _deployment("memory", bg_database, apis=1, workers=0)


@pytest.fixture(scope="package")
def dbos_deployment(bg_database: str) -> Iterator[Deployment]:
    yield from _deployment("dbos", bg_database, apis=2, workers=2)


@pytest.fixture(scope="package")
def hatchet_deployment(bg_database: str, hatchet_engine: dict[str, str]) -> Iterator[Deployment]:
    yield from _deployment("hatchet", bg_database, apis=2, workers=2, extra_env=hatchet_engine)


@asynccontextmanager
async def _in_use(request: pytest.FixtureRequest) -> AsyncIterator[Deployment]:
    """The package's deployment of the engine `request.param` names, its workers running; the
    SDK clients the test made are closed after it."""
    found: Deployment = request.getfixturevalue(f"{request.param}_deployment")
    found.ensure_workers()
    try:
        yield found
    finally:
        await found.close_clients()


@pytest.fixture(params=["memory", "dbos", "hatchet"])
async def deployment(request: pytest.FixtureRequest) -> AsyncIterator[Deployment]:
    async with _in_use(request) as found:
        yield found


@pytest.fixture(params=["dbos", "hatchet"])
async def workers(request: pytest.FixtureRequest) -> AsyncIterator[Deployment]:
    """The deployment of each engine that runs workers (two APIs, two workers)."""
    async with _in_use(request) as found:
        yield found
