"""What a worker does with a job: exactly the foreground non-streaming Responses path."""

from __future__ import annotations

import logging
from typing import Any

from lgos import context
from lgos.background.protocol import BackgroundJob, RunStatus
from lgos.errors import LgosError
from lgos.registry import GraphRegistry
from lgos.service import responses
from lgos.wire import ids, responses_request
from lgos.wire.errors import SERVER_ERROR_MESSAGE
from lgos.wire.responses import failure

logger = logging.getLogger("lgos.background")


def prepare_job(
    job: BackgroundJob, engine_run_id: str, registry: GraphRegistry
) -> responses.PreparedResponse:
    decoded = responses_request.decode(job.request)
    return responses.prepare(
        registry,
        decoded,
        response_id=str(ids.RunResponseId(job.run_id, engine_run_id)),
        run_id=job.run_id,
    )


async def execute_background_job(
    job: BackgroundJob, engine_run_id: str, registry: GraphRegistry
) -> dict[str, Any]:
    """Run a job and return its Response JSON.

    No retries: a graph that raises yields a `failed` Response. A request problem found here
    (a stale interrupt answer, a busy run) keeps its message; anything else gets a generic
    message and the details go to the log. A run whose worker died is continued from its
    last checkpoint when the graph has one, so finished nodes do not run again.
    """
    token = context.bind(model=job.model, run_id=job.run_id, engine_run_id=engine_run_id)
    try:
        prepared = prepare_job(job, engine_run_id, registry)
        context.add(response_id=prepared.context.id)
        try:
            return await responses.create(
                registry, prepared, scope=job.owner_scope, continue_existing=True
            )
        except LgosError as error:
            logger.info("background.request_rejected", extra={"code": error.code})
            return prepared.context.snapshot("failed", error=failure(error.message))
        except Exception:
            logger.exception("background.run_failed")
            return prepared.context.snapshot("failed", error=failure(SERVER_ERROR_MESSAGE))
    finally:
        context.reset(token)


def placeholder_snapshot(
    job: BackgroundJob, engine_run_id: str, status: RunStatus
) -> dict[str, Any]:
    """The Response for a run without a stored result (queued, running, cancelled, lost)."""
    decoded = responses_request.decode(job.request)
    response = responses.response_context(
        decoded, str(ids.RunResponseId(job.run_id, engine_run_id))
    )
    if status == "failed":
        return response.snapshot("failed", error=failure(SERVER_ERROR_MESSAGE))
    return response.snapshot(status)
