"""A2A tasks of background graphs, run on the background engine as background Responses.

A graph that runs in the background by default (`background_by_default`: a long task, where an
OpenAI client would otherwise ask for the background) is served by `BackgroundAgent` instead of
the SDK's in-process task machinery; other graphs run in the foreground, with contexts. A
message submits a streamed background Response through the service layer
(`BackgroundResponses`, as `POST /v1/responses` with `background` and `stream` does); the task
id is that first Response's id, so any API process answers for it, after a restart too.
The task's events are the Response's events, read from the engine's durable event log:

- `tasks/get` is a poll of the Response;
- `tasks/cancel` cancels the run on the engine;
- `tasks/resubscribe` sends the task as the log holds it so far (its artifact every chunk up to
  there), then every later event from the log, by sequence number: no gap, no repeat.

A graph that pauses (`interrupt()`) ends its Response with `lgos_interrupt` calls: the task is
`input-required`, its status message the question (`reviews.asking_parts`). The next message on
the task answers it as an OpenAI client would, with another background Response
(`previous_response_id`, `function_call_output`), which resumes the same checkpoint. The
task's later Responses are its *chain*, kept in the same durable log under a key of the task's
own (`chain_key`): entry n is the n-th answer's Response and the pause it answers. An entry is
written once (the log keeps the first event of a sequence number), so of two answers racing for
one pause only one joins the task. A refused answer (the worker fails its Response with the
refusal's message, and the question stays pending) asks the same question again, saying why.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing
from dataclasses import dataclass, field
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.types.a2a_pb2 import (
    Artifact,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import (
    InvalidParamsError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)

from lgos.core.background import TERMINAL_EVENTS
from lgos.core.client_settings import SETTINGS_KEY
from lgos.core.errors import LgosError, NotFoundError
from lgos.core.registry import GraphConfig
from lgos.protocols.a2a.executor import (
    ARTIFACT_ID,
    decode_message,
    decode_settings,
)
from lgos.protocols.a2a.reviews import (
    Question,
    RefusedReplyError,
    answers_from,
    asking_parts,
    question_of_call,
)
from lgos.protocols.background import (
    ChainView,
    TaskChain,
    answer_request,
    answer_text,
    background_request,
    can_run_in_background,
    failure_message,
    interrupt_calls,
    refused,
)
from lgos.service.background import BackgroundResponses
from lgos.wire import ids

# The task's context id rides in the Response's metadata, so a poll can give it back.
CONTEXT_KEY = "a2a_context_id"
STATES = {
    "queued": TaskState.TASK_STATE_SUBMITTED,
    "in_progress": TaskState.TASK_STATE_WORKING,
    "completed": TaskState.TASK_STATE_COMPLETED,
    "incomplete": TaskState.TASK_STATE_FAILED,
    "failed": TaskState.TASK_STATE_FAILED,
    "cancelled": TaskState.TASK_STATE_CANCELED,
}
ENDED = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
    }
)
# Where a message's call returns: the task ended, or it waits for the next message.
STOPS = ENDED | {TaskState.TASK_STATE_INPUT_REQUIRED}


def runs_in_background(config: GraphConfig, background: BackgroundResponses | None) -> bool:
    return (
        can_run_in_background(config, background)
        and background is not None
        and background.events is not None
        and config.background_by_default
    )


@dataclass(slots=True)
class TaskView:
    """A task as A2A shows it, and the chain it was read from."""

    task: Task
    chain: ChainView
    # The questions waiting for an answer (none when the task does not wait).
    questions: list[Question] = field(default_factory=list)


class BackgroundAgent(DefaultRequestHandler):
    """The SDK's handler for the card and the methods LGOS does not change; the task methods
    go to the background engine."""

    def __init__(
        self, model: str, config: GraphConfig, background: BackgroundResponses, **sdk: Any
    ) -> None:
        super().__init__(**sdk)
        self.model = model
        self.config = config
        self.background = background
        self.chain = TaskChain(background)

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Message | Task:
        last: Task | None = None
        async with aclosing(self._send(params, context)) as events:
            async for event in events:
                if isinstance(event, Task):
                    last = event
                    if params.configuration.return_immediately:
                        return event
                elif isinstance(event, TaskStatusUpdateEvent):
                    last = last or Task(id=event.task_id)
                    if event.status.state in STOPS:
                        break
        assert last is not None
        return (await self._view(last.id, context)).task

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        async with aclosing(self._send(params, context)) as events:
            async for event in events:
                yield event

    async def _send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        message = params.message
        if message.task_id:
            async for event in self._answer(message, context):
                yield event
            return
        try:
            request = decode_message(self.config, self.model, message)
        except LgosError as error:
            raise InvalidParamsError(message=error.message) from None
        context_id = message.context_id or str(uuid.uuid4())
        try:
            decoded = background_request(
                self.model, request, {CONTEXT_KEY: context_id}, stream=True
            )
            stream = await self.background.create_stream(
                decoded, owner_scope=_scope(context), idempotency_key=None
            )
        except LgosError as error:
            raise InvalidParamsError(message=error.message) from None
        async for event in TaskEvents(context_id, message).map(stream):
            yield event

    async def _answer(
        self, reply: Message, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        """The next message on a task: the answer to its question, as the task's next
        Response in the background."""
        view = await self._view(reply.task_id, context)
        task = view.task
        paused = view.chain.paused
        if paused is None:
            state = TaskState.Name(task.status.state).removeprefix("TASK_STATE_").lower()
            raise InvalidParamsError(
                message=f"Task {task.id} is not waiting for input (it is {state})."
            )
        events = TaskEvents(task.context_id, reply, task_id=task.id, asked=view.questions)
        try:
            answers = answers_from(view.questions, reply)
        except RefusedReplyError as refusal:
            yield events.asking(view.questions, str(refusal))
            return
        try:
            stream = await self.background.create_stream(
                answer_request(
                    self.model,
                    str(paused["id"]),
                    answers,
                    self._answer_metadata(task.context_id, reply, view),
                    stream=True,
                ),
                owner_scope=_scope(context),
                idempotency_key=None,
            )
        except LgosError as error:
            raise InvalidParamsError(message=error.message) from None
        async with aclosing(stream):
            answer_id = await _first_id(stream)
            if not await self.chain.join(task.id, view.chain, answer_id):
                raise InvalidParamsError(
                    message=f"Task {task.id}'s question was answered by another message."
                )
            async for event in events.map(_resumed(stream, answer_id)):
                yield event

    def _answer_metadata(self, context_id: str, reply: Message, view: TaskView) -> dict[str, str]:
        """The answer's Response metadata: the context, and the settings the task started with
        unless the reply brings its own."""
        metadata = {CONTEXT_KEY: context_id}
        if reply.HasField("metadata"):
            try:
                settings = decode_settings(self.config, self.model, reply)
            except LgosError as error:
                raise InvalidParamsError(message=error.message) from None
            if settings is not None:
                metadata[SETTINGS_KEY] = settings.model_dump_json()
            return metadata
        kept = (view.chain.latest.get("metadata") or {}).get(SETTINGS_KEY)
        if kept is not None:
            metadata[SETTINGS_KEY] = str(kept)
        return metadata

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task:
        return (await self._view(params.id, context)).task

    async def _view(self, task_id: str, context: ServerCallContext) -> TaskView:
        try:
            chain = await self.chain.view(task_id, _scope(context))
        except NotFoundError:
            raise TaskNotFoundError from None
        context_id = str((chain.first.get("metadata") or {}).get(CONTEXT_KEY) or "")
        view = TaskView(task_of(chain.latest, task_id=task_id, context_id=context_id), chain)
        if chain.cancelled:
            view.task.status.CopyFrom(TaskStatus(state=TaskState.TASK_STATE_CANCELED))
        elif chain.paused is not None:
            view.questions = questions_of(chain.paused)
            asking = TaskEvents(context_id, None, task_id=task_id).asking(
                view.questions, chain.note
            )
            view.task.status.CopyFrom(asking.status)
        return view

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task:
        view = await self._view(params.id, context)
        state = view.task.status.state
        if state in ENDED:
            raise TaskNotCancelableError
        if view.chain.paused is not None:
            await self.chain.cancel_waiting(params.id, view.chain)
        else:
            await self.background.cancel(str(view.chain.latest["id"]), owner_scope=_scope(context))
        return (await self._view(params.id, context)).task

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        view = await self._view(params.id, context)
        task = view.task
        if task.status.state in ENDED:
            raise UnsupportedOperationError(message=f"Task {params.id} has ended.")
        if view.chain.paused is not None:
            yield task  # waiting for an answer: nothing runs to follow
            return
        latest_id = str(view.chain.latest["id"])
        parsed = ids.parse_run_response_id(latest_id)
        assert parsed is not None
        answered = view.chain.answered
        asked = questions_of(answered) if answered is not None else None
        # The task as the log holds it so far, then the log from there on.
        held = await self.chain.log.read(parsed.nonce, -1)
        mapping = TaskEvents(task.context_id, None, task_id=params.id, asked=asked)
        for event in held:
            mapping.absorb(event)
        yield mapping.snapshot()
        if any(event.get("type") in TERMINAL_EVENTS for event in held):
            return
        after = int(held[-1]["sequence_number"]) if held else -1
        tail = await self.background.stream(
            latest_id, owner_scope=_scope(context), starting_after=after
        )
        async with aclosing(mapping.map(tail)) as following:
            async for update in following:
                yield update

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        raise UnsupportedOperationError(message=f"'{self.model}' does not list its tasks.")


async def _first_id(stream: AsyncIterator[Mapping[str, Any]]) -> str:
    """The Response id, from the stream's first event (`response.created`)."""
    created = await anext(stream)
    return str(created["response"]["id"])


async def _resumed(
    stream: AsyncIterator[Mapping[str, Any]], response_id: str
) -> AsyncGenerator[Mapping[str, Any], None]:
    """The answer's stream, its first event (read by `_first_id`) given back."""
    yield {"type": "response.created", "response": {"id": response_id}}
    async for event in stream:
        yield event


def questions_of(response: Mapping[str, Any]) -> list[Question]:
    """The questions of a Response that paused (none for any other)."""
    return [
        question_of_call(call_id, arguments) for call_id, arguments in interrupt_calls(response)
    ]


class TaskEvents:
    """A background Response's stream events as one A2A task's events."""

    def __init__(
        self,
        context_id: str,
        message: Message | None,
        task_id: str | None = None,
        asked: list[Question] | None = None,
    ) -> None:
        """`asked`: the events are of an answer's Response, to these questions (the task, and
        its id, exist already)."""
        self.context_id = context_id
        self.message = message
        self.task_id = task_id or ""
        self.asked = asked
        self.phases: dict[int, str] = {}
        self.text = ""
        self.state: TaskState = TaskState.TASK_STATE_SUBMITTED

    async def map(self, events: AsyncIterator[Mapping[str, Any]]) -> AsyncGenerator[Event, None]:
        async for event in events:
            for mapped in self.absorb(event):
                yield mapped

    def absorb(self, event: Mapping[str, Any]) -> list[Event]:
        kind = event.get("type")
        if kind == "response.created":
            if self.asked is not None:
                self.state = TaskState.TASK_STATE_WORKING
                return [self._status(TaskState.TASK_STATE_WORKING)]
            self.task_id = self.task_id or str(event["response"]["id"])
            return [self.snapshot()]
        if kind == "response.in_progress":
            self.state = TaskState.TASK_STATE_WORKING
            return [self._status(TaskState.TASK_STATE_WORKING)]
        if kind == "response.output_item.added":
            item = event.get("item") or {}
            self.phases[int(event["output_index"])] = str(item.get("phase") or "final_answer")
            return []
        if kind == "response.output_text.delta":
            text = str(event.get("delta") or "")
            if not text:
                return []
            if self.phases.get(int(event["output_index"])) == "commentary":
                return [self._status(TaskState.TASK_STATE_WORKING, text)]
            append = bool(self.text)
            self.text += text
            return [self._chunk(text, append=append, last=False)]
        if kind in TERMINAL_EVENTS:
            response = event["response"]
            questions = questions_of(response)
            if questions and response.get("status") == "completed":
                return [self.asking(questions, None)]  # paused
            if self.asked and refused(response):
                return [self.asking(self.asked, failure_message(response))]
            state = STATES.get(str(response.get("status")), TaskState.TASK_STATE_FAILED)
            self.state = state
            ended: list[Event] = []
            if state == TaskState.TASK_STATE_COMPLETED:
                self.text = answer_text(response) or self.text
                ended.append(self._chunk(self.text, append=False, last=True))
            return [*ended, self._status(state, failure_message(response))]
        return []

    def snapshot(self) -> Task:
        task = Task(
            id=self.task_id, context_id=self.context_id, status=TaskStatus(state=self.state)
        )
        if self.message is not None:
            sent = Message()
            sent.CopyFrom(self.message)
            sent.task_id, sent.context_id = self.task_id, self.context_id
            task.history.append(sent)
        if self.text:
            task.artifacts.append(_artifact(self.text))
        return task

    def asking(self, questions: list[Question], note: str | None) -> TaskStatusUpdateEvent:
        """The task waits for the answer to `questions` (`note`: why they are asked again)."""
        self.state = TaskState.TASK_STATE_INPUT_REQUIRED
        event = self._status(TaskState.TASK_STATE_INPUT_REQUIRED)
        event.status.message.CopyFrom(
            Message(
                message_id=str(uuid.uuid4()),
                role=Role.ROLE_AGENT,
                task_id=self.task_id,
                context_id=self.context_id,
                parts=asking_parts(questions, note),
            )
        )
        return event

    def _status(self, state: TaskState, text: str | None = None) -> TaskStatusUpdateEvent:
        status = TaskStatus(state=state)
        if text:
            status.message.CopyFrom(
                Message(
                    message_id=str(uuid.uuid4()),
                    role=Role.ROLE_AGENT,
                    task_id=self.task_id,
                    context_id=self.context_id,
                    parts=[Part(text=text)],
                )
            )
        return TaskStatusUpdateEvent(
            task_id=self.task_id, context_id=self.context_id, status=status
        )

    def _chunk(self, text: str, *, append: bool, last: bool) -> TaskArtifactUpdateEvent:
        return TaskArtifactUpdateEvent(
            task_id=self.task_id,
            context_id=self.context_id,
            artifact=_artifact(text),
            append=append,
            last_chunk=last,
        )


def task_of(
    response: Mapping[str, Any], *, task_id: str | None = None, context_id: str | None = None
) -> Task:
    """A polled background Response as its task (by default, the task it started)."""
    metadata = response.get("metadata") or {}
    state = STATES.get(str(response.get("status")), TaskState.TASK_STATE_FAILED)
    task = Task(
        id=task_id or str(response["id"]),
        context_id=context_id or str(metadata.get(CONTEXT_KEY) or ""),
        status=TaskStatus(state=state),
    )
    failure = failure_message(response)
    if failure:
        task.status.message.CopyFrom(
            Message(message_id=str(uuid.uuid4()), role=Role.ROLE_AGENT, parts=[Part(text=failure)])
        )
    text = answer_text(response)
    if text:
        task.artifacts.append(_artifact(text))
    return task


def _artifact(text: str) -> Artifact:
    return Artifact(artifact_id=ARTIFACT_ID, name=ARTIFACT_ID, parts=[Part(text=text)])


def _scope(context: ServerCallContext) -> str:
    return context.user.user_name
