"""A2A tasks of background graphs, run on the background engine as background Responses.

A graph that runs in the background by default (`background_by_default`: a long task, where an
OpenAI client would otherwise ask for the background; and no reviews: a pause would need a
second Response under the same task) is served by `BackgroundAgent` instead of the SDK's
in-process task machinery; other graphs run in the foreground, with reviews and contexts. A
message submits a streamed background Response through the service layer
(`BackgroundResponses`, as `POST /v1/responses` with `background` and `stream` does); the task
id is the Response id, so any API process answers for it, after a restart too.
The task's events are the Response's events, read from the engine's durable event log:

- `tasks/get` is a poll of the Response;
- `tasks/cancel` cancels the run on the engine;
- `tasks/resubscribe` sends the task as the log holds it so far (its artifact every chunk up to
  there), then every later event from the log, by sequence number: no gap, no repeat.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Mapping
from contextlib import aclosing
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
from lgos.core.errors import LgosError, NotFoundError
from lgos.core.registry import GraphConfig
from lgos.protocols.a2a.executor import ARTIFACT_ID, decode_message
from lgos.protocols.background import (
    answer_text,
    background_request,
    can_run_as_task,
    failure_message,
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


def runs_in_background(config: GraphConfig, background: BackgroundResponses | None) -> bool:
    return (
        can_run_as_task(config, background)
        and background is not None
        and background.events is not None
        and config.background_by_default
    )


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
                elif isinstance(event, TaskStatusUpdateEvent) and event.status.state in ENDED:
                    break
        assert last is not None
        return await self._task(last.id, context)

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
            raise InvalidParamsError(
                message=f"'{self.model}' runs each message as a new task: omit taskId."
            )
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

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task:
        return await self._task(params.id, context)

    async def _task(self, task_id: str, context: ServerCallContext) -> Task:
        try:
            response = await self.background.retrieve(task_id, owner_scope=_scope(context))
        except NotFoundError:
            raise TaskNotFoundError from None
        return task_of(response)

    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task:
        task = await self._task(params.id, context)
        if task.status.state in ENDED:
            raise TaskNotCancelableError
        response = await self.background.cancel(params.id, owner_scope=_scope(context))
        return task_of(response)

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        task = await self._task(params.id, context)
        if task.status.state in ENDED:
            raise UnsupportedOperationError(message=f"Task {params.id} has ended.")
        parsed = ids.parse_run_response_id(params.id)
        log = self.background.events
        assert parsed is not None
        assert log is not None
        # The task as the log holds it so far, then the log from there on.
        held = await log.read(parsed.nonce, -1)
        mapping = TaskEvents(task.context_id, None, task_id=params.id)
        for event in held:
            mapping.absorb(event)
        yield mapping.snapshot()
        if any(event.get("type") in TERMINAL_EVENTS for event in held):
            return
        after = int(held[-1]["sequence_number"]) if held else -1
        tail = await self.background.stream(
            params.id, owner_scope=_scope(context), starting_after=after
        )
        async with aclosing(mapping.map(tail)) as following:
            async for update in following:
                yield update

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        raise UnsupportedOperationError(message=f"'{self.model}' does not list its tasks.")


class TaskEvents:
    """A background Response's stream events as one A2A task's events."""

    def __init__(
        self, context_id: str, message: Message | None, task_id: str | None = None
    ) -> None:
        self.context_id = context_id
        self.message = message
        self.task_id = task_id or ""
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
            self.task_id = str(event["response"]["id"])
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


def task_of(response: Mapping[str, Any]) -> Task:
    """A polled background Response as its task."""
    metadata = response.get("metadata") or {}
    state = STATES.get(str(response.get("status")), TaskState.TASK_STATE_FAILED)
    task = Task(
        id=str(response["id"]),
        context_id=str(metadata.get(CONTEXT_KEY) or ""),
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
