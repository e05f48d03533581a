"""PostgreSQL persistence: LangGraph's saver and store and the run coordinator on one pool.

With `LGOS_POSTGRES_URI` set, paused runs survive restarts and are shared by every replica:
the checkpoints live in LangGraph's tables, the pause index in `lgos_paused_runs`, and the
single-flight lease of a run is a session-level advisory lock, so it vanishes with the session
of a process that dies.

Pool budget (`LGOS_POSTGRES_POOL_SIZE` = N connections per process): a lease keeps one
connection for as long as its run executes, so leases may take at most `N // 2` of them; the
rest serve checkpoint and store I/O, which a running graph needs while it holds its lease.
Without that bound, N concurrent runs would hold every connection and wait forever for one
more to write their checkpoints.

Modules, one idea each: `pool` (the connection pool and its checkout check), `outage` (a
database outage watched once per process: the probe that refills the pool, bounded logging),
`locks` (session advisory locks), `migrations` (LangGraph's schema and LGOS's), `coordinator` (run
leases and the pause index), `events` (the streamed Responses' event log), `stored` (stored
Responses and Conversations), `resources` (`open_postgres`, which opens them together), and for
`lgos worker` on any engine `liveness` (a worker's lease, heartbeat and fencing) and
`wake_guard` (exiting on wake from a stop that may have cost the lease).
"""

from lgos.integrations.postgres.coordinator import PostgresRunCoordinator, RunCapacityError
from lgos.integrations.postgres.events import PostgresResponseEventLog
from lgos.integrations.postgres.locks import (
    advisory_unlock,
    try_advisory_lock,
    wait_for_advisory_lock,
)
from lgos.integrations.postgres.migrations import MIGRATIONS, apply_migrations
from lgos.integrations.postgres.pool import Pool
from lgos.integrations.postgres.resources import PostgresResources, open_postgres

__all__ = [
    "MIGRATIONS",
    "Pool",
    "PostgresResources",
    "PostgresResponseEventLog",
    "PostgresRunCoordinator",
    "RunCapacityError",
    "advisory_unlock",
    "apply_migrations",
    "open_postgres",
    "try_advisory_lock",
    "wait_for_advisory_lock",
]
