"""Fencing a worker that lost its lease: a reaper ends its sessions, and a worker that learns
it lost its lease exits at once."""

from __future__ import annotations

import logging
import os
from typing import Any

from psycopg import AsyncConnection

logger = logging.getLogger("lgos.background.dbos")

# The `application_name` of every database session of one worker process.
WORKER_APPLICATION_PREFIX = "lgos-worker "
# Exit status of a worker that lost its lease (sysexits' EX_TEMPFAIL: restart me).
LEASE_LOST_EXIT_STATUS = 75


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
