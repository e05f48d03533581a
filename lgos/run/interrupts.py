"""Human review: pausable runs, strict resume validation, cleanup.

A pausable run is addressed by a server-chosen run id; its LangGraph thread id is a digest of
the server-trusted scope, the model and the run id, so a client can never name another
tenant's checkpoint. Every execution holds the run's lease. A resume is validated under that
lease against the checkpoint's real pending set, because LangGraph's own resume is lenient (a
stale id can answer the next question).
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from typing import Any

from langgraph.types import Command

from lgos.errors import InterruptConflictError, InvalidRequestError
from lgos.registry import CompiledGraph, GraphConfig
from lgos.run.coordinator import RunCoordinator
from lgos.run.events import Finished, Interrupted, RunEvent
from lgos.run.request import GraphRequest
from lgos.run.runner import Checkpointing, run_graph, runnable_config

logger = logging.getLogger("lgos.run")

_CLEANUP_TIMEOUT_SECONDS = 10.0


def checkpoint_thread_id(scope: str, model: str, run_id: str) -> str:
    payload = json.dumps(["lgos.run", scope, model, run_id], separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


@dataclass(frozen=True, slots=True)
class Resume:
    """Answers to a paused run: LangGraph interrupt id → the client's output string."""

    answers: Mapping[str, str]


async def run_checkpointed(
    config: GraphConfig,
    request: GraphRequest,
    coordinator: RunCoordinator,
    *,
    scope: str,
    run_id: str,
    streaming: bool,
    resume: Resume | None = None,
    continue_existing: bool = False,
    checkpoint_id: str | None = None,
    turn_id: str | None = None,
    keep_thread: bool = False,
) -> AsyncIterator[RunEvent]:
    """Run a checkpointed graph under its lease; pause, finish or clean up.

    `continue_existing` resumes a run whose worker died: if the checkpoint has work left, it
    continues from there instead of starting over.

    With `keep_thread` (a GraphFeature.THREADS graph in a stored conversation) the run id
    names the conversation's thread: its checkpoints outlive the run (they are the
    conversation's state), a new turn starts from `checkpoint_id` (where the previous turn
    ended: continuing an older Response forks the thread there), and the terminal event
    carries the checkpoint the run ended on.
    """
    graph = await config.resolve_graph()
    keep = keep_thread
    latest = Checkpointing(
        run_id, checkpoint_thread_id(scope, request.model, run_id), turn_id=turn_id
    )
    key = latest.thread_id
    async with coordinator.lease(key):
        graph_input: Any = None  # None continues from the checkpoint
        checkpointing = latest
        if continue_existing and await _has_pending_work(
            graph, config, request, latest, turn_id if keep else None
        ):
            # A worker died mid-run (after applying the answer, if any): pick up where it was.
            pass
        elif resume is not None:
            graph_input = await _resume_command(graph, config, request, latest, resume)
        else:
            graph_input = config.request_to_input(request)
            if keep and checkpoint_id is not None:
                checkpointing = dataclasses.replace(latest, checkpoint_id=checkpoint_id)
        ended = False
        try:
            async for event in run_graph(
                config,
                request,
                streaming=streaming,
                checkpointing=checkpointing,
                graph_input=graph_input,
                graph=graph,
            ):
                if keep and isinstance(event, Interrupted | Finished):
                    # The thread is the conversation's: it lives as long as its Responses and
                    # Conversation, not as a pause that expires.
                    await coordinator.mark_done(key)
                    ended = True
                    ended_on = await _latest_checkpoint(graph, config, request, latest)
                    event = dataclasses.replace(event, checkpoint_id=ended_on)
                elif isinstance(event, Interrupted):
                    await coordinator.mark_paused(key)
                    ended = True
                elif isinstance(event, Finished):
                    await _delete(graph, coordinator, key)
                    ended = True
                yield event
        except InvalidRequestError:
            # A rejected answer saved nothing: the question is still pending.
            raise
        except BaseException:
            # Failed or cancelled before it paused or finished: nobody can resume it. (A
            # consumer closing the stream after the terminal event is not a failure.) A kept
            # thread stays: its next turn starts from the last good checkpoint.
            if not ended and not keep:
                await _delete_quietly(graph, coordinator, key)
            raise


async def _resume_command(
    graph: CompiledGraph,
    config: GraphConfig,
    request: GraphRequest,
    checkpointing: Checkpointing,
    resume: Resume,
) -> Command[Any]:
    state = await graph.aget_state(runnable_config(config, request, checkpointing))
    pending = {item.id: item for item in state.interrupts}
    if not pending:
        raise InterruptConflictError(
            "This run has no pending question: it was already answered, finished or expired."
        )
    answered = set(resume.answers)
    if answered != set(pending):
        stale = sorted(answered - set(pending))
        missing = sorted(set(pending) - answered)
        details = []
        if stale:
            details.append(f"{len(stale)} answer(s) do not match a pending question")
        if missing:
            details.append(f"{len(missing)} pending question(s) are not answered")
        raise InterruptConflictError(
            "The answers do not match the run's pending questions: " + "; ".join(details) + "."
        )
    values = {
        interrupt_id: _answer_value(output, pending[interrupt_id].response_schema is not None)
        for interrupt_id, output in resume.answers.items()
    }
    return Command(resume=values)


def _answer_value(output: str, structured: bool) -> Any:
    """Plain questions get the output string unchanged; schema questions get parsed JSON."""
    if not structured:
        return output
    try:
        return json.loads(output)
    except json.JSONDecodeError:
        return output


async def _has_pending_work(
    graph: CompiledGraph,
    config: GraphConfig,
    request: GraphRequest,
    checkpointing: Checkpointing,
    turn_id: str | None,
) -> bool:
    """Work left by this run. On a kept thread only this turn's checkpoints count: a failed
    earlier turn also leaves work behind, which is not this turn's to finish."""
    state = await graph.aget_state(runnable_config(config, request, checkpointing))
    if turn_id is not None and (state.metadata or {}).get("lgos.turn") != turn_id:
        return False
    return bool(state.next) and not state.interrupts


async def _latest_checkpoint(
    graph: CompiledGraph, config: GraphConfig, request: GraphRequest, checkpointing: Checkpointing
) -> str | None:
    state = await graph.aget_state(runnable_config(config, request, checkpointing))
    checkpoint_id = (state.config or {}).get("configurable", {}).get("checkpoint_id")
    return str(checkpoint_id) if checkpoint_id else None


async def _delete(graph: CompiledGraph, coordinator: RunCoordinator, key: str) -> None:
    checkpointer = graph.checkpointer
    delete_thread = getattr(checkpointer, "adelete_thread", None)
    if delete_thread is not None:
        await delete_thread(key)
    await coordinator.mark_done(key)


async def _delete_quietly(graph: CompiledGraph, coordinator: RunCoordinator, key: str) -> None:
    """Best-effort cleanup that never masks the original error, even when cancelled."""
    try:
        await asyncio.shield(
            asyncio.wait_for(_delete(graph, coordinator, key), _CLEANUP_TIMEOUT_SECONDS)
        )
    except BaseException as error:
        logger.warning("graph_run.cleanup_failed", extra={"error.type": type(error).__qualname__})
