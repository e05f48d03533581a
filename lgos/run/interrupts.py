"""Human review: pausable runs, strict resume validation, cleanup.

A pausable run is addressed by a server-chosen run id; its LangGraph thread id is a digest of
the server-trusted scope, the model and the run id, so a client can never name another
tenant's checkpoint. Every execution holds the run's lease. A resume is validated under that
lease against the checkpoint's real pending set, because LangGraph's own resume is lenient (a
stale id can answer the next question).

A resume never loses the question. LangGraph saves the answer a node received even when the
node then fails, and would hand that same answer to the node again on the next resume, so a
failed resume puts back the answers the paused checkpoint held (see `_PauseRecord`). When the
failure came after the question was passed, the failed checkpoint is kept until it expires,
so a client retrying the request gets the failure again, not "already answered".
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import jsonschema
from langchain_core.runnables import RunnableConfig
from langgraph.checkpoint.base import BaseCheckpointSaver, CheckpointTuple
from langgraph.constants import CONFIG_KEY_CHECKPOINTER
from langgraph.types import Command, StateSnapshot

from lgos.core import safe_json
from lgos.core.coordinator import RunCoordinator
from lgos.core.errors import (
    InterruptConflictError,
    InvalidAnswerError,
    InvalidRequestError,
    RunFailedError,
    is_transient_database_error,
)
from lgos.core.json_schema import JsonSchema
from lgos.core.registry import CompiledGraph, GraphConfig
from lgos.core.request import GraphRequest
from lgos.core.run_events import Finished, Interrupted, RunEvent
from lgos.run.runner import Checkpointing, run_graph, runnable_config

logger = logging.getLogger("lgos.run")

_CLEANUP_TIMEOUT_SECONDS = 10.0


def checkpoint_thread_id(scope: str, model: str, run_id: str) -> str:
    payload = json.dumps(["lgos.run", scope, model, run_id], separators=(",", ":"))
    return hashlib.sha256(payload.encode()).hexdigest()


# LangGraph's pending-write channels (private constants there): the answers a task has received
# (a list, one per interrupt() call), and a task's error.
_RESUME_CHANNEL = "__resume__"
_ERROR_CHANNEL = "__error__"


@dataclass(frozen=True, slots=True)
class Resume:
    """Answers to a paused run: LangGraph interrupt id → the client's output string.

    `params` names, per interrupt id, where the client put the answer (`input[2].output`), so
    a refused answer points at it.
    """

    answers: Mapping[str, str]
    params: Mapping[str, str] = field(default_factory=dict)

    def param(self, interrupt_id: str) -> str:
        return self.params.get(interrupt_id, "input")


@dataclass(frozen=True, slots=True)
class _PausedLevel:
    """One checkpoint namespace of a pause (the root graph, or a subgraph that asked)."""

    config: RunnableConfig
    answers: dict[str, Any]  # task id → the answers it held before this resume
    questions: dict[str, tuple[str, ...]]  # task id → the interrupt ids it is waiting on


@dataclass(frozen=True, slots=True)
class _PauseRecord:
    """What a paused run held before a resume, enough to put its questions back."""

    root_checkpoint_id: str
    levels: tuple[_PausedLevel, ...]


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
        paused: _PauseRecord | None = None
        if (
            continue_existing
            # Taking the lease may already prove there is nothing to continue (a run's first
            # execution, the common case): one checkpoint read less.
            and not coordinator.leased_fresh(key)
            and await _has_pending_work(graph, config, request, latest, turn_id if keep else None)
        ):
            # A worker died mid-run (after applying the answer, if any): pick up where it was.
            pass
        elif resume is not None:
            state, read = await _paused_state(graph, runnable_config(config, request, latest))
            graph_input = _resume_command(state, resume)
            paused = await _record_pause(graph, state, read)
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
        except BaseException as error:
            # A consumer closing the stream after the terminal event is not a failure.
            if ended:
                raise
            if paused is None:
                # A new run that failed or was cancelled before it paused: nobody can resume it.
                # A kept thread stays: its next turn starts from the last good checkpoint. So
                # does a run that failed for want of the database: its retry continues from
                # where it was (the sweep removes the checkpoint of one never retried).
                if keep or is_transient_database_error(error):
                    raise
                await _delete_quietly(graph, coordinator, key)
                raise
            refused = await _after_failed_resume(graph, coordinator, key, paused, resume, error)
            if refused is not None:
                raise refused from error
            raise


def _resume_command(state: StateSnapshot, resume: Resume) -> Command[Any]:
    """Check the answers against the real pending set, and each against its schema."""
    pending = {item.id: item for item in state.interrupts}
    if not pending:
        if any(task.error is not None for task in state.tasks):
            # It failed after taking an earlier answer; this is most likely a retry of that
            # request, which deserves the failure, not "already answered".
            raise RunFailedError()
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
    values = {}
    for interrupt_id, output in resume.answers.items():
        schema = getattr(pending[interrupt_id], "response_schema", None)
        values[interrupt_id] = (
            output if schema is None else _schema_answer(output, schema, resume.param(interrupt_id))
        )
    return Command(resume=values)


def _schema_answer(output: str, schema: JsonSchema, param: str) -> Any:
    """A question with a response schema takes JSON that matches it, checked before the graph
    runs (LangGraph would check it inside the node, after the node's earlier code ran)."""
    try:
        value = safe_json.loads(output)
    except safe_json.JSONLimitError as error:
        raise error.refusal(param) from None
    except json.JSONDecodeError:
        value = output  # a bare string answer, which a string schema accepts
    try:
        jsonschema.validate(value, schema)
    except jsonschema.ValidationError as error:
        where = "/".join(str(part) for part in error.absolute_path)
        raise InvalidRequestError(
            "The answer does not match the question's response schema"
            + (f" at '{where}'" if where else "")
            + f": {error.message}",
            param=param,
            code="invalid_value",
        ) from None
    except jsonschema.SchemaError:
        logger.warning("graph_run.unusable_response_schema")  # LangGraph still validates it
    return value


class _ReadRecorder(BaseCheckpointSaver[Any]):
    """A run's saver for `aget_state` that keeps every checkpoint it reads, pending writes and
    all: the snapshot leaves out the answers each task already holds, and the pause record
    takes them from here instead of reading each checkpoint again."""

    def __init__(self, saver: BaseCheckpointSaver[Any]) -> None:
        super().__init__(serde=saver.serde)
        self._saver = saver
        self.read: dict[tuple[str, str], CheckpointTuple] = {}

    async def aget_tuple(self, config: RunnableConfig) -> CheckpointTuple | None:
        saved = await self._saver.aget_tuple(config)
        if saved is not None:
            self.read[_level_key(saved.config)] = saved
        return saved

    async def aget_delta_channel_history(self, *, config: RunnableConfig, channels: Any) -> Any:
        return await self._saver.aget_delta_channel_history(config=config, channels=channels)

    def get_next_version(self, current: Any, channel: None) -> Any:
        return self._saver.get_next_version(current, channel)


def _level_key(config: RunnableConfig | None) -> tuple[str, str]:
    configurable = (config or {}).get("configurable", {})
    return str(configurable.get("checkpoint_ns", "")), _checkpoint_id(config or {})


async def _paused_state(
    graph: CompiledGraph, run_config: RunnableConfig
) -> tuple[StateSnapshot, Mapping[tuple[str, str], CheckpointTuple]]:
    """The paused run's state at every level, and the checkpoints it was built from."""
    recorder = _ReadRecorder(graph.checkpointer)  # type: ignore[arg-type]
    # LangGraph reads a state through the saver a config names (it lends its own to subgraphs
    # that way), so every level's read goes through the recorder.
    configurable = {**run_config.get("configurable", {}), CONFIG_KEY_CHECKPOINTER: recorder}
    state = await graph.aget_state({**run_config, "configurable": configurable}, subgraphs=True)
    return state, recorder.read


async def _record_pause(
    graph: CompiledGraph, state: StateSnapshot, read: Mapping[tuple[str, str], CheckpointTuple]
) -> _PauseRecord:
    """The answers every task of the pause holds, at every level that has a checkpoint."""
    checkpointer: Any = graph.checkpointer
    levels: list[_PausedLevel] = []

    async def visit(snapshot: StateSnapshot) -> None:
        saved = read.get(_level_key(snapshot.config))
        if saved is None:  # not expected: every level of the snapshot was read above
            saved = await checkpointer.aget_tuple(snapshot.config)
        writes = (saved.pending_writes or []) if saved is not None else []
        held = {task_id: value for task_id, channel, value in writes if channel == _RESUME_CHANNEL}
        answers = {task.id: held.get(task.id, []) for task in snapshot.tasks}
        questions = {
            task.id: tuple(item.id for item in task.interrupts)
            for task in snapshot.tasks
            if task.interrupts
        }
        levels.append(_PausedLevel(snapshot.config, answers, questions))
        for task in snapshot.tasks:
            if isinstance(task.state, StateSnapshot):
                await visit(task.state)

    await visit(state)
    return _PauseRecord(_checkpoint_id(state.config), tuple(levels))


def _checkpoint_id(config: RunnableConfig) -> str:
    return str(config.get("configurable", {}).get("checkpoint_id", ""))


async def _after_failed_resume(
    graph: CompiledGraph,
    coordinator: RunCoordinator,
    key: str,
    paused: _PauseRecord,
    resume: Resume | None,
    error: BaseException,
) -> InvalidRequestError | None:
    """Keep the run answerable (or its failure visible) after a resume failed or was cancelled.

    Returns the error to raise instead when the graph refused an answer (its `param` names
    the answer). Never raises: cleanup must not mask the original error.
    """
    try:
        return await asyncio.shield(
            asyncio.wait_for(
                _restore_pause(graph, coordinator, key, paused, resume, error),
                _CLEANUP_TIMEOUT_SECONDS,
            )
        )
    except BaseException as cleanup_error:
        logger.warning(
            "graph_run.restore_failed", extra={"error.type": type(cleanup_error).__qualname__}
        )
        return None


async def _restore_pause(
    graph: CompiledGraph,
    coordinator: RunCoordinator,
    key: str,
    paused: _PauseRecord,
    resume: Resume | None,
    error: BaseException,
) -> InvalidRequestError | None:
    checkpointer: Any = graph.checkpointer
    head = await checkpointer.aget_tuple({"configurable": {"thread_id": key, "checkpoint_ns": ""}})
    if head is None or _checkpoint_id(head.config) != paused.root_checkpoint_id:
        if isinstance(error, Exception):
            # The run moved past the question and then failed: keep the failed checkpoint (it
            # expires like a pause) so that a retry is told about the failure.
            await coordinator.mark_paused(key)
        else:
            # Cancelled (or its client left) after the question: nothing to answer or retry.
            await _delete(graph, coordinator, key)
        return None
    # Still at the question: put back the answers each task held, which drops the one the
    # failed attempt saved, so the next answer is the one the node receives.
    for level in paused.levels:
        for task_id, answers in level.answers.items():
            await checkpointer.aput_writes(level.config, [(_RESUME_CHANNEL, answers)], task_id)
    await coordinator.mark_paused(key)
    if isinstance(error, InvalidAnswerError) and resume is not None:
        failed = {
            task_id for task_id, channel, _ in head.pending_writes if channel == _ERROR_CHANNEL
        }
        return InvalidAnswerError(error.message, param=_refused_param(paused, resume, failed))
    return None


def _refused_param(paused: _PauseRecord, resume: Resume, failed_tasks: set[str]) -> str:
    """Where the refused answer is: the answer to the question of the task that raised."""
    root = paused.levels[0]
    for task_id in failed_tasks:
        for interrupt_id in root.questions.get(task_id, ()):
            if interrupt_id in resume.answers:
                return resume.param(interrupt_id)
    if len(resume.answers) == 1:
        return resume.param(next(iter(resume.answers)))
    return "input"


async def has_work_left(
    config: GraphConfig,
    request: GraphRequest,
    *,
    scope: str,
    run_id: str,
    turn_id: str | None = None,
) -> bool:
    """Whether the checkpoint of `run_id` holds work to continue (a worker died mid-run),
    for a caller that holds the run's lease; `turn_id` counts only that turn's checkpoints
    (a kept thread's)."""
    graph = await config.resolve_graph()
    checkpointing = Checkpointing(
        run_id, checkpoint_thread_id(scope, request.model, run_id), turn_id=turn_id
    )
    return await _has_pending_work(graph, config, request, checkpointing, turn_id)


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
    # A task error left here is the database's: a run that failed for good or was cancelled
    # deleted its checkpoint, and one that lost the database kept it for this retry, which
    # runs the failed task again (LangGraph keeps the writes of those that finished).
    return bool(state.next) and not state.interrupts


async def _latest_checkpoint(
    graph: CompiledGraph, config: GraphConfig, request: GraphRequest, checkpointing: Checkpointing
) -> str | None:
    state = await graph.aget_state(runnable_config(config, request, checkpointing))
    checkpoint_id = (state.config or {}).get("configurable", {}).get("checkpoint_id")
    return str(checkpoint_id) if checkpoint_id else None


async def _delete(graph: CompiledGraph, coordinator: RunCoordinator, key: str) -> None:
    checkpointer = graph.checkpointer
    if await coordinator.finish(key, checkpointer):
        return  # deleted with the lease's release
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
