"""`lgos serve` processes for the stateful tests, started by the one launcher of
tests/support, with an SDK client on each."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path

from openai import AsyncOpenAI

from tests.support.processes import Process, clean_environment, lgos

_NUMBERS = itertools.count()


@dataclass
class LgosServer:
    process: Process

    @property
    def base_url(self) -> str:
        return f"{self.process.base_url}/v1"

    def sdk(self) -> AsyncOpenAI:
        return AsyncOpenAI(
            base_url=self.base_url,
            api_key="x",
            _strict_response_validation=True,
            max_retries=0,
            timeout=60,
        )

    def output(self) -> str:
        return self.process.output()

    def kill(self) -> None:
        self.process.kill()

    def stop(self) -> None:
        self.process.stop()


def start_lgos(
    registry: str, database_uri: str, log_dir: Path, extra_env: dict[str, str] | None = None
) -> LgosServer:
    """`lgos serve registry` on a free port (PostgreSQL when `database_uri`, else in memory),
    once Uvicorn runs."""
    env = clean_environment(
        **{
            "LGOS_POSTGRES_URI": database_uri,
            "LGOS_BACKGROUND": "none",
            "LGOS_INTERRUPT_SWEEP_INTERVAL_MINUTES": "0",
            **(extra_env or {}),
        }
    )
    log = log_dir / f"lgos-{next(_NUMBERS)}.log"
    server = lgos("serve", registry, "--host", "127.0.0.1", "--port", "0", env=env, log=log)
    try:
        server.wait_until_serving()
    except BaseException:
        server.kill()
        raise
    return LgosServer(server)


def start_worker(registry: str, database_uri: str, extra_env: dict[str, str]) -> Process:
    """`lgos worker registry` on the same database as the API, once it has started."""
    env = clean_environment(
        **{"LGOS_POSTGRES_URI": database_uri, "LGOS_WORKER_SLOTS": "2", **extra_env}
    )
    worker = lgos("worker", registry, env=env)
    try:
        worker.wait_for_record(lambda record: record.get("message") == "worker.started")
    except BaseException:
        worker.kill()
        raise
    return worker
