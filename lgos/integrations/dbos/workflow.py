"""The workflow a DBOS worker runs: one step that hands the job to this process's executor,
then the enqueue of the run's completion webhooks (`dbos.webhooks`), if any are configured."""

from __future__ import annotations

from typing import Any

from dbos import DBOS, WorkflowSerializationFormat

from lgos.background import webhooks
from lgos.background.executor import JobExecutor
from lgos.core.background import BackgroundJob
from lgos.integrations.dbos.names import MAX_RECOVERY_ATTEMPTS, STEP_NAME, WORKFLOW_NAME
from lgos.integrations.dbos.webhooks import WEBHOOK_WORKFLOW, enqueue_in_workflow


class _Workflow:
    """The one workflow of this process and the executor its step hands jobs to.

    DBOS names workflows globally and passes them only JSON arguments, so the executor (and
    the registry in it) cannot travel as an argument: the worker sets it here while it runs.
    """

    def __init__(self) -> None:
        self.executor: JobExecutor | None = None
        self._registered = False

    # JSON in and out (the job, the Response): DBOS passes and stores only JSON, and checks
    # the workflow's and step's arguments against these hints.
    async def run_graph(self, run_id: str, job: dict[str, Any]) -> dict[str, Any]:
        executor = self.executor
        if executor is None:
            raise RuntimeError("no LGOS DBOS worker is running in this process")
        return dict(await executor(BackgroundJob.model_validate(job), run_id))

    def register(self) -> None:
        """Declare the workflow and its step with DBOS (once per process, before launch)."""
        if self._registered:
            return
        run_graph = self.run_graph

        async def _run_graph_step(run_id: str, job: dict[str, Any]) -> dict[str, Any]:  # JSON
            return await run_graph(run_id, job)

        # Preemptible: cancelling the workflow cancels the running graph (CancelledError in
        # the node). No step retries: a failed graph is a failed Response.
        step = DBOS.step(name=STEP_NAME, preemptible=True, retries_allowed=False)(_run_graph_step)

        async def background_response(run_id: str, job: dict[str, Any]) -> dict[str, Any]:  # JSON
            response = await step(run_id, job)
            # After the graph's step: a recovered workflow replays the step's recorded end and
            # enqueues the same deliveries again, which DBOS keeps once (their ids are fixed).
            found = webhooks.for_end(WEBHOOK_WORKFLOW.settings, str(response["id"]), response)
            await enqueue_in_workflow(found)
            return response

        # A run is re-dispatched when its worker dies; a run that keeps killing its workers (out
        # of memory, say) ends as failed after this many deaths instead of looping forever.
        DBOS.workflow(
            name=WORKFLOW_NAME,
            max_recovery_attempts=MAX_RECOVERY_ATTEMPTS,
            serialization_type=WorkflowSerializationFormat.PORTABLE,
        )(background_response)
        self._registered = True


WORKFLOW = _Workflow()
