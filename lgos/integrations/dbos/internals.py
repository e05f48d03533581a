"""The parts of DBOS Transact (pinned: dbos 3.4.0) that LGOS uses although DBOS does not
document them, in one place. tests/internals/test_dbos.py checks each one's shape, so the
upgrade that changes one fails there first. docs/design-choices.md says why each is needed.
"""

from __future__ import annotations

from dbos import DBOS

# One run's state, input and output, read by its primary key: what a poll needs. DBOS keeps a
# workflow's input and output in side tables (older rows: in the status row itself), as its
# own `list_workflows` reads them. Written against DBOS's system schema ("dbos", which LGOS
# never renames).
READ_RUN = """
SELECT s.status, s.name, s.serialization,
       coalesce(i.inputs, s.inputs), coalesce(o.output, s.output)
FROM dbos.workflow_status s
LEFT JOIN dbos.workflow_input i ON i.workflow_uuid = s.workflow_uuid
LEFT JOIN dbos.workflow_output o ON o.workflow_uuid = s.workflow_uuid
WHERE s.workflow_uuid = %s
"""
# How DBOS names the JSON it stores for workflows declared PORTABLE (all of LGOS's), and the
# key of the positional arguments in a portable workflow's stored input.
PORTABLE_JSON = "portable_json"
PORTABLE_POSITIONAL_ARGS = "positionalArgs"


def recover_pending_workflows(executor_id: str) -> int:
    """Have DBOS re-enqueue the runs still PENDING under a dead executor; return how many.

    DBOS's own recovery (what a DBOS process does at launch for its own executor id): it
    touches only rows still PENDING under that executor, and hands each back through the
    queue's atomic dequeue, so two reapers racing recover a run once. Blocking: call it in a
    thread.
    """
    return len(DBOS._recover_pending_workflows([executor_id]))
