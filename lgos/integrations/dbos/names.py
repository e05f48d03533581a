"""What LGOS calls its DBOS application, workflow, step and queue: every API process and
worker of a deployment must agree on these."""

APPLICATION_NAME = "lgos"
# The workflow is one step that runs a job; its code does not depend on the user's graphs, so
# one fixed version lets every deployment's workers dequeue and recover every run. Change it
# only when the job format or the workflow's steps change incompatibly.
APPLICATION_VERSION = "lgos-background-1"
WORKFLOW_NAME = "lgos.background_response"
STEP_NAME = "lgos.run_graph"
QUEUE_NAME = "lgos-background"
MAX_RECOVERY_ATTEMPTS = 5
# How often a worker looks for new runs by default (DBOS polls its queue table; it has no
# notification for a new queued workflow). Each look is one short transaction per worker;
# a new run waits half the interval on average (`LGOS_WORKER_QUEUE_POLL_SECONDS`).
QUEUE_POLLING_INTERVAL_SECONDS = 0.05
# Completion webhooks: one workflow per event and endpoint, on a queue of their own (a
# delivery that waits between attempts must not hold one of the worker's run slots).
WEBHOOK_WORKFLOW_NAME = "lgos.webhook_delivery"
WEBHOOK_STEP_NAME = "lgos.webhook_attempt"
WEBHOOK_QUEUE_NAME = "lgos-webhooks"
