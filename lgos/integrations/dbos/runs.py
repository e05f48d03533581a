"""A DBOS workflow read as a `BackgroundRun`: its id, its status in LGOS's terms, its job
(the workflow's input) and its Response (the workflow's output)."""

from __future__ import annotations

import logging
import uuid
from typing import TYPE_CHECKING

from pydantic import ValidationError
from pydantic_core import from_json

from lgos.core.background import (
    TERMINAL_STATUSES,
    BackgroundJob,
    BackgroundRun,
    engine_statuses,
)
from lgos.integrations.dbos.internals import PORTABLE_POSITIONAL_ARGS

if TYPE_CHECKING:
    from dbos import WorkflowStatus

logger = logging.getLogger("lgos.background.dbos")

_RUN_NAMESPACE = uuid.UUID("3f4f9a2e-55f1-4b7e-9d8a-1c2b3d4e5f60")

_STATUS = engine_statuses(
    queued=["ENQUEUED", "DELAYED"],
    in_progress=["PENDING"],
    completed=["SUCCESS"],
    failed=["ERROR", "MAX_RECOVERY_ATTEMPTS_EXCEEDED"],
    cancelled=["CANCELLED"],
)
FINISHED = [name for name, status in _STATUS.items() if status in TERMINAL_STATUSES]


def engine_run_id(idempotency_key: str | None) -> str:
    """The workflow id: derived from the key, so every retry of a create names one run."""
    if idempotency_key is None:
        return uuid.uuid4().hex
    return uuid.uuid5(_RUN_NAMESPACE, idempotency_key).hex


def to_run(status: WorkflowStatus) -> BackgroundRun | None:
    """Our view of a DBOS workflow; None for anything that is not one of our runs."""
    inputs = status.input or {"args": (), "kwargs": {}}
    args = tuple(inputs.get("args") or ())
    if len(args) != 2:
        return None
    try:
        job = BackgroundJob.model_validate(args[1])
        run = BackgroundRun(id=status.workflow_id, job=job, status=_STATUS[status.status])
    except (ValidationError, KeyError):
        logger.warning(
            "background.dbos.foreign_workflow", extra={"workflow_id": status.workflow_id}
        )
        return None
    return run.with_output(status.output)


def portable_run(
    run_id: str, status: str, inputs: str | None, output: str | None
) -> BackgroundRun | None:
    """`to_run` for a row read directly: portable JSON is plain JSON, the arguments under
    `positionalArgs`."""
    arguments = from_json(inputs) if inputs else None
    args = arguments.get(PORTABLE_POSITIONAL_ARGS) if isinstance(arguments, dict) else None
    if not isinstance(args, list) or len(args) != 2 or status not in _STATUS:
        logger.warning("background.dbos.foreign_workflow", extra={"workflow_id": run_id})
        return None
    try:
        job = BackgroundJob.model_validate(args[1])
    except ValidationError:
        logger.warning("background.dbos.foreign_workflow", extra={"workflow_id": run_id})
        return None
    run = BackgroundRun(id=run_id, job=job, status=_STATUS[status])
    return run.with_output(from_json(output) if output is not None else None)
