"""DBOS Transact engine: background Responses as durable workflows in the user's PostgreSQL.

API processes talk plain SQL through `DBOSClient` (no DBOS runtime): submit = enqueue a
workflow whose id is the engine run id, get = read its status, input and output, cancel =
`cancel_workflow`. Workers (`lgos worker`, `LGOS_BACKGROUND=dbos`) call `DBOS.launch()` and run
the queue. The Response JSON is the workflow output and the `BackgroundJob` its input, both
stored as JSON (portable serialization), so there is no Response table of our own.

Idempotency is the workflow id: a keyed create uses `uuid5(digest)`, and DBOS returns the
existing workflow for an id already taken, on any API instance, even after it finished.

Recovery: each worker holds a lease on its executor id, a row in `lgos_workers` whose expiry
it pushes forward every `LGOS_WORKER_LEASE_SECONDS / 4` (database clock). Every worker
periodically looks for runs left PENDING by executors whose lease expired (their process died,
or is stuck: SIGSTOP, a frozen VM, a partition) and takes them over:

1. it deletes the expired row (one reaper wins);
2. it ends every database session of that worker process (their `application_name` names the
   process), which drops the run leases a stuck worker still holds;
3. it has DBOS re-enqueue the runs, which another worker continues from their checkpoint.

A worker that wakes from a stop long enough to have lost its lease exits before its event loop
resumes a graph (`WakeGuard`; its supervisor restarts it); its heartbeat finds its row gone
too, and DBOS's ownership token refuses any result it still tries to record: the replacement's
result is the one kept. A database restart does not make a
live worker look dead: the lease outlives a restart of a few seconds, and heartbeats reconnect.

Modules, one idea each: `names` (what LGOS calls its workflow, queue and application),
`runs` (a workflow read as a `BackgroundRun`), `schema` (migrations and the connection URL),
`backend` (the API side), `workflow` (the workflow and step a worker runs), `worker` (the
worker process: launch, recovery, retention). The lease, its heartbeat, the fencing and
`WakeGuard` are every engine's: `lgos.integrations.postgres.liveness` and `.wake_guard`.
"""

from lgos.integrations.dbos.backend import DBOSBackgroundBackend, open_dbos_client
from lgos.integrations.dbos.names import (
    APPLICATION_NAME,
    APPLICATION_VERSION,
    QUEUE_NAME,
    QUEUE_POLLING_INTERVAL_SECONDS,
    WORKFLOW_NAME,
)
from lgos.integrations.dbos.runs import engine_run_id, to_run
from lgos.integrations.dbos.schema import migrate, sqlalchemy_url
from lgos.integrations.dbos.worker import DBOSWorker
from lgos.integrations.postgres.liveness import LEASE_LOST_EXIT_STATUS, WORKER_APPLICATION_PREFIX

__all__ = [
    "APPLICATION_NAME",
    "APPLICATION_VERSION",
    "LEASE_LOST_EXIT_STATUS",
    "QUEUE_NAME",
    "QUEUE_POLLING_INTERVAL_SECONDS",
    "WORKER_APPLICATION_PREFIX",
    "WORKFLOW_NAME",
    "DBOSBackgroundBackend",
    "DBOSWorker",
    "engine_run_id",
    "migrate",
    "open_dbos_client",
    "sqlalchemy_url",
    "to_run",
]
