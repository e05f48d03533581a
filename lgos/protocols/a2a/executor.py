"""One A2A task of one graph: run it through the service layer and publish what it does.

A message starts the graph's run (`plan_run`, `run_events`: the same pausable runs, leases,
owner scope and answer checks as a Responses request). While it runs, streamed text is
appended to the task's one artifact (`answer`) and `status_event(...)` commentary becomes a
`working` status message; the end replaces the artifact with the whole answer in one part and
completes the task. A pause is `input-required`, its status message the question
(`reviews.asking_parts`); the next message on the task answers it, and an answer refused by
the question or by the graph asks again, saying why. Cancelling the task cancels the run.

The task's context is its conversation: a thread-keeping graph continues the context's
LangGraph thread; any other graph is sent the context's earlier completed tasks first.
"""

from __future__ import annotations

import asyncio
import dataclasses
import hashlib
import json
import logging
import time
from typing import Any

from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    ListTasksRequest,
    Message,
    Part,
    Role,
    Task,
    TaskState,
    TaskStatus,
)
from google.protobuf.json_format import MessageToDict
from langchain_core.messages import AIMessage, BaseMessage, HumanMessage

from lgos.core.client_settings import SETTINGS_KEY
from lgos.core.errors import SERVER_ERROR_MESSAGE, InvalidRequestError, LgosError
from lgos.core.registry import GraphConfig, GraphRegistry
from lgos.core.request import GraphRequest
from lgos.core.run_events import Commentary, Finished, Interrupted, TextDelta
from lgos.protocols.a2a.reviews import (
    Question,
    RefusedReplyError,
    answers_from,
    asked_questions,
    asking_parts,
    question_for,
)
from lgos.service.runs import RunPlan, plan_run, run_events

logger = logging.getLogger("lgos.a2a")

ARTIFACT_ID = "answer"
# The longest message text a graph is given (the request body limit applies first).
MAX_TEXT_CHARS = 1_000_000
# How many earlier tasks of a context a graph without a thread is shown (the SDK's page limit).
MAX_EARLIER_TURNS = 100


def owner_scope_of(context: RequestContext) -> str:
    """The owner scope the endpoint resolved for this request (endpoint.ScopeUser)."""
    return context.call_context.user.user_name


def decode_message(config: GraphConfig, model: str, message: Message) -> GraphRequest:
    """A new task's message as the graph's request; InvalidRequestError names the problem."""
    if any(not part.HasField("text") for part in message.parts):
        raise InvalidRequestError(f"'{model}' takes text parts only.")
    text = "\n".join(part.text for part in message.parts)
    if len(text) > MAX_TEXT_CHARS:
        raise InvalidRequestError(f"The message is longer than {MAX_TEXT_CHARS} characters.")
    return GraphRequest(
        model=model,
        messages=(HumanMessage(content=text),) if text else (),
        settings=decode_settings(config, model, message),
    )


def decode_settings(config: GraphConfig, model: str, message: Message) -> Any:
    """`metadata.lgos_settings` of the message: the settings the model listing describes."""
    metadata = MessageToDict(message.metadata) if message.HasField("metadata") else {}
    raw = metadata.get(SETTINGS_KEY)
    if config.client_settings is None:
        if raw is not None:
            raise InvalidRequestError(f"'{model}' has no client settings.")
        return None
    if raw is not None and not isinstance(raw, str):
        raw = json.dumps(whole_numbers(raw))
    return config.client_settings.from_metadata(raw)


def whole_numbers(value: Any) -> Any:
    """A protobuf Struct holds every JSON number as a double: 5 arrives as 5.0. Whole ones go
    back to ints, so integer settings validate as the client wrote them."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {key: whole_numbers(item) for key, item in value.items()}
    if isinstance(value, list):
        return [whole_numbers(item) for item in value]
    return value


def thread_run_id(context_id: str) -> str:
    """A thread-keeping graph's run id for a context: the context is the conversation, so
    every task in it continues one LangGraph thread. Hashed, since the client may name it."""
    return hashlib.sha256(context_id.encode()).hexdigest()[:32]


class GraphExecutor(AgentExecutor):
    def __init__(self, registry: GraphRegistry, model: str, store: TaskStore) -> None:
        self.registry = registry
        self.model = model
        self.config = registry.graphs[model]
        self.store = store

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None
        assert context.context_id is not None
        turn = Turn(self, context, TaskUpdater(event_queue, context.task_id, context.context_id))
        started = time.perf_counter()
        outcome = "failed"
        try:
            outcome = await turn.run()
        except asyncio.CancelledError:
            outcome = "cancelled"
            raise
        finally:
            logger.info(
                "a2a.message",
                extra={
                    "a2a.agent": self.model,
                    "a2a.task_id": context.task_id,
                    "outcome": outcome,
                    "duration_ms": round((time.perf_counter() - started) * 1000, 1),
                },
            )

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Mark the task cancelled; the SDK then cancels `execute`, which closes the run."""
        assert context.task_id is not None
        assert context.context_id is not None
        await TaskUpdater(event_queue, context.task_id, context.context_id).cancel()
        logger.info("a2a.cancel", extra={"a2a.agent": self.model, "a2a.task_id": context.task_id})


class Turn:
    """One `execute`: a new task's run, or the answer to its waiting question."""

    def __init__(
        self, executor: GraphExecutor, context: RequestContext, updater: TaskUpdater
    ) -> None:
        self.executor = executor
        self.config = executor.config
        self.model = executor.model
        self.context = context
        self.updater = updater
        self.scope = owner_scope_of(context)
        task = context.current_task
        self.task: Task | None = task
        # Text the task's artifact already holds (streamed before a pause).
        self.earlier = _artifact_text(task) if task is not None else ""
        self.streamed = ""

    async def run(self) -> str:
        message = self.context.message
        assert message is not None
        try:
            if (
                self.task is not None
                and self.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
            ):
                return await self._answer(message)
            request = decode_message(self.config, self.model, message)
            if not self.config.keeps_thread:
                earlier = await self._conversation()
                request = dataclasses.replace(request, messages=(*earlier, *request.messages))
            if self.task is None:
                await self.updater.event_queue.enqueue_event(self._new_task(message))
            await self.updater.start_work()
            return await self._drive(request, self._new_plan(), asked=None)
        except LgosError as error:
            await self._fail(error.message)
        except Exception:
            logger.exception("a2a.message.failed", extra={"a2a.agent": self.model})
            await self._fail(SERVER_ERROR_MESSAGE)
        return "failed"

    async def _conversation(self) -> tuple[BaseMessage, ...]:
        """The earlier turns of this context, for a graph that keeps no thread of its own:
        each completed task's message and answer, oldest first (as a stored conversation
        replays its items)."""
        found = await self.executor.store.list(
            ListTasksRequest(
                context_id=self.context.context_id or "",
                status=TaskState.TASK_STATE_COMPLETED,
                page_size=MAX_EARLIER_TURNS,
            ),
            self.context.call_context,
        )
        turns: list[BaseMessage] = []
        for task in reversed(found.tasks):
            asked = next((m for m in task.history if m.role == Role.ROLE_USER), None)
            if asked is not None:
                turns.append(HumanMessage(content=_text(asked)))
            turns.append(AIMessage(content=_artifact_text(task)))
        return tuple(turns)

    def _new_task(self, message: Message) -> Task:
        return Task(
            id=self.updater.task_id,
            context_id=self.updater.context_id,
            status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
            history=[message],
        )

    def _new_plan(self) -> RunPlan:
        if self.config.keeps_thread:
            context_id = self.context.context_id or ""
            return plan_run(
                self.config, answers=None, run_id=thread_run_id(context_id), keep_thread=True
            )
        return plan_run(self.config, answers=None)

    async def _answer(self, reply: Message) -> str:
        assert self.task is not None
        questions = asked_questions(self.task.status.message)
        try:
            answers = answers_from(questions, reply)
        except RefusedReplyError as refusal:
            return await self._ask(questions, str(refusal))
        # The settings the task started with, unless the reply brings its own.
        first = self.task.history[0] if self.task.history else reply
        source = reply if reply.HasField("metadata") else first
        request = GraphRequest(
            model=self.model, messages=(), settings=decode_settings(self.config, self.model, source)
        )
        await self.updater.start_work()
        return await self._drive(request, plan_run(self.config, answers=answers), asked=questions)

    async def _drive(
        self, request: GraphRequest, plan: RunPlan, asked: list[Question] | None
    ) -> str:
        events = run_events(
            self.executor.registry, self.config, request, plan, scope=self.scope, streaming=True
        )
        try:
            async for event in events:
                if isinstance(event, TextDelta):
                    await self._append(event.text)
                elif isinstance(event, Commentary):
                    await self.updater.start_work(self._agent_message(event.text))
                elif isinstance(event, Finished):
                    await self._finish(event.text or event.message.text)
                    return "completed"
                elif isinstance(event, Interrupted):
                    questions = [question_for(event.run_id, item) for item in event.interrupts]
                    return await self._ask(questions, None)
        except InvalidRequestError as error:
            # The graph (or the question's schema) refused the answer; the run layer has put
            # the question back, so it is asked again, saying why.
            if plan.resume is None or asked is None:
                raise
            return await self._ask(asked, error.message)
        finally:
            await events.aclose()  # type: ignore[attr-defined]
        raise RuntimeError("the run ended without a terminal event")

    async def _append(self, text: str) -> None:
        if not text:
            return
        append = bool(self.earlier or self.streamed)
        self.streamed += text
        await self.updater.add_artifact(
            [Part(text=text)], artifact_id=ARTIFACT_ID, name=ARTIFACT_ID, append=append
        )

    async def _finish(self, final_text: str) -> None:
        """The whole answer replaces the streamed chunks: one part, the exact text."""
        text = self.earlier + (self.streamed or final_text)
        if text:
            await self.updater.add_artifact(
                [Part(text=text)],
                artifact_id=ARTIFACT_ID,
                name=ARTIFACT_ID,
                append=False,
                last_chunk=True,
            )
        await self.updater.complete()

    async def _ask(self, questions: list[Question], note: str | None) -> str:
        message = self.updater.new_agent_message(asking_parts(questions, note))
        await self.updater.requires_input(message)
        return "input_required"

    async def _fail(self, text: str) -> None:
        await self.updater.failed(self._agent_message(text))

    def _agent_message(self, text: str) -> Message:
        return self.updater.new_agent_message([Part(text=text)])


def _text(message: Message) -> str:
    return "\n".join(part.text for part in message.parts if part.HasField("text"))


def _artifact_text(task: Task) -> str:
    return "".join(
        part.text
        for artifact in task.artifacts
        if artifact.artifact_id == ARTIFACT_ID
        for part in artifact.parts
    )
