"""A worker's liveness, whatever its engine: a lease on its executor id in `lgos_workers`, a
heartbeat that keeps it, and the fencing of a worker whose lease expired.

Each `lgos worker` process holds one row (executor id, incarnation, expiry on the database's
clock) and pushes the expiry forward every quarter lease from a thread of its own. A live
worker that finds a row expired (its process died, or is stuck: SIGSTOP, a frozen VM, a
partition) deletes it (one reaper wins) and ends every database session of that process: their
`application_name` names the process (`PGAPPNAME`), so the run leases the stuck process still
holds go with them, and another worker can continue its runs. What hands those runs to another
worker is the engine's part (DBOS re-enqueues them; Hatchet reassigns the tasks of a worker
whose engine heartbeat stopped).

A stuck worker that wakes learns it lost its lease from its heartbeat (its row is gone) or
sooner from `WakeGuard`, and exits at once with `LEASE_LOST_EXIT_STATUS`, writing nothing on
behalf of runs another worker now owns.
"""

from __future__ import annotations

import asyncio
import logging
import os
import threading
import time
import uuid
from typing import Any

import psycopg
from psycopg import AsyncConnection

from lgos.core.errors import ConfigurationError
from lgos.integrations.postgres.locks import advisory_unlock, wait_for_advisory_lock

logger = logging.getLogger("lgos.background.liveness")

# The `application_name` of every database session of one worker process.
WORKER_APPLICATION_PREFIX = "lgos-worker "
# Exit status of a worker that lost its lease (sysexits' EX_TEMPFAIL: restart me).
LEASE_LOST_EXIT_STATUS = 75

WORKERS_TABLE = """
CREATE TABLE IF NOT EXISTS lgos_workers (
    executor_id text PRIMARY KEY,
    incarnation text NOT NULL,
    expires_at timestamptz NOT NULL
)
"""
_TABLE_LOCK = "lgos.workers.table"


async def end_sessions(conn: AsyncConnection[Any], incarnation: str) -> None:
    """End every session of one (dead or stuck) worker process: its run leases go with them."""
    cursor = await conn.execute(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        "WHERE application_name = %s AND pid <> pg_backend_pid()",
        (WORKER_APPLICATION_PREFIX + incarnation,),
    )
    row = await cursor.fetchone()
    logger.info(
        "worker.fenced",
        extra={"incarnation": incarnation, "sessions_ended": int(row[0]) if row else 0},
    )


def lease_lost(executor_id: str, reason: str) -> None:
    logger.critical("worker.lease_lost", extra={"executor_id": executor_id, "detail": reason})
    logging.shutdown()
    # At once: no cleanup that could write on behalf of runs another worker now owns.
    os._exit(LEASE_LOST_EXIT_STATUS)


class WorkerLease:
    """One worker process's lease on its executor id, and the fencing of expired ones."""

    def __init__(
        self,
        uri: str,
        executor_id: str,
        *,
        lease_seconds: float = 30.0,
        incarnation: str | None = None,
    ) -> None:
        self.uri = uri
        self.executor_id = executor_id
        self.lease_seconds = lease_seconds
        # This process, as opposed to the executor id a restarted worker reuses.
        self.incarnation = incarnation or uuid.uuid4().hex[:16]
        # When (monotonic clock) a statement that renewed our lease was sent: the lease is ours
        # until at least `lease_seconds` after that moment.
        self._renewed_at = time.monotonic()
        self._stopped = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def application_name(self) -> str:
        return WORKER_APPLICATION_PREFIX + self.incarnation

    async def connect(self) -> AsyncConnection[Any]:
        return await AsyncConnection.connect(
            self.uri, autocommit=True, application_name=self.application_name
        )

    async def create_table(self) -> None:
        """For engines without a migration of their own (DBOS's `migrate` creates it too)."""
        async with await self.connect() as conn:
            # Workers starting together: one creates it, the others find it.
            await wait_for_advisory_lock(conn, _TABLE_LOCK, limit_seconds=600.0)
            try:
                await conn.execute(WORKERS_TABLE)
            finally:
                await advisory_unlock(conn, _TABLE_LOCK)

    async def claim(self) -> None:
        """Take the lease on our executor id. A previous process with this id whose lease
        expired (it died, or is stuck) is fenced off first; a live one makes us wait for its
        lease to run out, then give up."""
        deadline = time.monotonic() + 2 * self.lease_seconds + 10
        async with await self.connect() as conn:
            while True:
                self._renewed_at = time.monotonic()
                async with conn.transaction():
                    cursor = await conn.execute(
                        "SELECT incarnation, expires_at < now() FROM lgos_workers "
                        "WHERE executor_id = %s FOR UPDATE",
                        (self.executor_id,),
                    )
                    row = await cursor.fetchone()
                    if row is None or row[1]:
                        await conn.execute(
                            "INSERT INTO lgos_workers (executor_id, incarnation, expires_at) "
                            "VALUES (%s, %s, now() + make_interval(secs => %s)) "
                            "ON CONFLICT (executor_id) DO UPDATE SET "
                            "incarnation = excluded.incarnation, expires_at = excluded.expires_at",
                            (self.executor_id, self.incarnation, self.lease_seconds),
                        )
                        if row is not None:
                            await end_sessions(conn, str(row[0]))
                        return
                if time.monotonic() > deadline:
                    raise ConfigurationError(
                        f"another live worker uses the executor id {self.executor_id!r}; "
                        "give each worker its own LGOS_WORKER_ID"
                    )
                await asyncio.sleep(0.5)

    def start_heartbeat(self) -> None:
        self._thread = threading.Thread(target=self._heartbeat, name="lgos-heartbeat", daemon=True)
        self._thread.start()

    def stop_heartbeat(self) -> None:
        self._stopped.set()
        if self._thread is not None:
            self._thread.join()

    def _heartbeat(self) -> None:
        """Keep our lease; exit the process the moment we learn it was taken from us.

        A thread with its own connection, not a task: a graph node that keeps the event loop
        busy for a while is still progress, and must not cost the worker its runs.
        """
        interval = self.lease_seconds / 4
        conn: psycopg.Connection[Any] | None = None
        # A beat that fails on an open connection is tried again at once on a new one: a
        # reaper ends a stuck worker's sessions, and the woken worker must learn that now, not
        # an interval later (while its event loop may resume a graph).
        retry_now = False
        while retry_now or not self._stopped.wait(interval):
            retry_now = False
            sent_at = time.monotonic()
            try:
                if conn is None or conn.closed:
                    conn = psycopg.connect(
                        self.uri,
                        autocommit=True,
                        application_name=self.application_name,
                        connect_timeout=max(2, int(interval)),
                    )
                else:
                    retry_now = True
                cursor = conn.execute(
                    "UPDATE lgos_workers SET expires_at = now() + make_interval(secs => %s) "
                    "WHERE executor_id = %s AND incarnation = %s RETURNING 1",
                    (self.lease_seconds, self.executor_id, self.incarnation),
                )
                kept = cursor.fetchone() is not None
                retry_now = False
            except Exception as error:
                # The database is away (a restart, say): keep running, try again soon. The
                # lease outlives a short outage; after a long one we learn whether it held.
                logger.warning(
                    "worker.heartbeat_failed", extra={"error.type": type(error).__qualname__}
                )
                if conn is not None:
                    conn.close()
                conn = None
                continue
            if not kept:
                lease_lost(self.executor_id, "another worker took over this worker's runs")
            self._renewed_at = sent_at
        if conn is not None:
            conn.close()

    def may_be_lost(self) -> bool:
        """True once our lease could have expired on the database's clock.

        A worker that keeps beating renews it every quarter lease; a margin of one more quarter
        covers the database's clock running a little faster than ours.
        """
        return time.monotonic() - self._renewed_at > 0.75 * self.lease_seconds

    async def release(self) -> None:
        try:
            async with await self.connect() as conn:
                await conn.execute(
                    "DELETE FROM lgos_workers WHERE executor_id = %s AND incarnation = %s",
                    (self.executor_id, self.incarnation),
                )
        except Exception as error:
            # The lease simply expires.
            logger.warning(
                "worker.lease_release_failed", extra={"error.type": type(error).__qualname__}
            )

    async def fence(self, owner: str) -> bool:
        """Claim a worker whose lease expired and end its sessions; False while it lives."""
        async with await self.connect() as conn:
            cursor = await conn.execute(
                "DELETE FROM lgos_workers WHERE executor_id = %s AND expires_at < now() "
                "RETURNING incarnation",
                (owner,),
            )
            row = await cursor.fetchone()
            if row is not None:
                await end_sessions(conn, str(row[0]))
                return True
            cursor = await conn.execute(
                "SELECT 1 FROM lgos_workers WHERE executor_id = %s", (owner,)
            )
            # No lease at all: its reaper died between claiming it and recovering its runs.
            return await cursor.fetchone() is None

    async def fence_expired(self) -> list[str]:
        """Fence every worker whose lease expired; return their executor ids.

        For engines that hand a stuck worker's runs to another worker by themselves (Hatchet):
        ending its sessions is all that is left to do, so its run leases are free when they do.
        """
        fenced: list[str] = []
        async with await self.connect() as conn:
            cursor = await conn.execute(
                "DELETE FROM lgos_workers WHERE expires_at < now() AND executor_id <> %s "
                "RETURNING executor_id, incarnation",
                (self.executor_id,),
            )
            for executor_id, incarnation in await cursor.fetchall():
                logger.info("worker.lease_expired", extra={"dead_executor_id": executor_id})
                await end_sessions(conn, str(incarnation))
                fenced.append(str(executor_id))
        return fenced
