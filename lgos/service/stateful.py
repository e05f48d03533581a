"""Stateful Responses: what a request continues, what is kept afterwards, and reading it back.

A request with `previous_response_id` continues that stored Response: its history is the
previous Response's history, input and output. A request with `conversation` continues the
Conversation's items. A graph without memory receives that history as messages; a graph that
keeps its own thread (GraphFeature.THREADS) runs on the conversation's thread, from the
checkpoint the previous turn ended on, and receives only what its thread has not seen.
Answering a pause stays a resume of the paused run.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass

from lgos.core.background import PENDING_STATUSES, BackgroundBackend, event_log, logged_end
from lgos.core.errors import ConflictError, InvalidRequestError, NotFoundError
from lgos.core.registry import GraphConfig, GraphRegistry
from lgos.core.stored import Order, ResponseStore, StoredConversation, StoredResponse, now
from lgos.core.stored_memory import page as paginate
from lgos.run.interrupts import checkpoint_thread_id
from lgos.service.responses import PreparedResponse, Turn
from lgos.wire import ids, items
from lgos.wire.responses_decoder import DecodedResponsesRequest
from lgos.wire.types.events import StreamEvent
from lgos.wire.types.items import ItemList, StoredItem, as_items
from lgos.wire.types.responses import DeletedResponse, ResponseObject, as_response

logger = logging.getLogger("lgos.stateful")


def not_found(response_id: str) -> NotFoundError:
    return NotFoundError(f"Response with id '{response_id}' not found.", param="response_id")


def conversation_not_found(conversation_id: str, param: str) -> NotFoundError:
    return NotFoundError(f"Conversation with id '{conversation_id}' not found.", param=param)


# The turn of a request that continues nothing, by whether it is stored: frozen, so shared
# rather than built for every request.
_TURNS = {True: Turn(store=True), False: Turn(store=False)}


@dataclass(frozen=True, slots=True)
class Page:
    after: str | None = None
    limit: int = items.DEFAULT_LIMIT
    order: Order = "desc"


class StatefulResponses:
    """The use cases of stored Responses, bound to one store, registry and engine."""

    def __init__(
        self,
        store: ResponseStore,
        registry: GraphRegistry,
        background: BackgroundBackend | None = None,
        *,
        store_by_default: bool = True,
    ) -> None:
        self.store = store
        self.registry = registry
        self.background = background
        self.store_by_default = store_by_default

    # -- before a run ---------------------------------------------------------------------

    def keeps(self, decoded: DecodedResponsesRequest) -> bool:
        if decoded.background:
            return True  # the engine keeps it anyway; the decoder refuses store=false
        store = decoded.body.store
        return self.store_by_default if store is None else store

    async def resolve(
        self, decoded: DecodedResponsesRequest, scope: str
    ) -> tuple[DecodedResponsesRequest, Turn]:
        """The request with its conversation's history, and where its turn sits."""
        store = self.keeps(decoded)
        config = self.registry.get(decoded.body.model)
        previous_id = decoded.body.previous_response_id
        conversation_id = decoded.conversation_id
        if previous_id is not None:
            record = await self.store.get_response(previous_id, scope)
            if record is None:
                if decoded.answers is not None:
                    # Answering a pause needs no stored Response: the run holds the question.
                    return decoded, _TURNS[store]
                raise InvalidRequestError(
                    f"Previous response with id '{previous_id}' not found.",
                    param="previous_response_id",
                    code="previous_response_not_found",
                )
            if decoded.answers is not None:
                output = await self.known_output(record)
            else:
                output = await self.output_of(record, scope, param="previous_response_id")
            history = [*as_items(record.history), *as_items(record.input_items), *output]
            thread = ids.parse_run_response_id(previous_id)
            seen = (
                config.keeps_thread
                and record.model == decoded.body.model
                and record.checkpoint_id is not None
            )
            replay_from = len(history) if seen else 0
            resolved = decoded.with_history(history, replay_from=replay_from)
            turn = Turn(
                replay_from=replay_from,
                store=store,
                history=tuple(history),
                thread_run_id=thread.run_id if thread and seen else None,
                checkpoint_id=record.checkpoint_id or None if seen else None,
            )
            return resolved, turn
        if conversation_id is not None:
            conversation = await self.conversation(conversation_id, scope, param="conversation")
            history = as_items(await self.store.all_items(conversation.id))
            model = decoded.body.model
            head = conversation.heads.get(model) if config.keeps_thread else None
            seen_items = conversation.seen.get(model, 0) if head is not None else 0
            resolved = decoded.with_history(history, replay_from=seen_items)
            turn = Turn(
                replay_from=seen_items,
                store=store,
                history=tuple(history),
                conversation_id=conversation.id,
                thread_run_id=(
                    ids.parse_conversation_id(conversation.id) if config.keeps_thread else None
                ),
                checkpoint_id=head or None,
            )
            return resolved, turn
        return decoded, _TURNS[store]

    async def conversation(
        self, conversation_id: str, scope: str, *, param: str = "conversation_id"
    ) -> StoredConversation:
        """The conversation, once its finished background turns are in its items. A turn
        still running makes the conversation busy."""
        found = await self.store.get_conversation(conversation_id, scope)
        if found is None:
            raise conversation_not_found(conversation_id, param)
        if not found.pending:
            return found
        still: list[str] = []
        heads, seen = dict(found.heads), dict(found.seen)
        for response_id in found.pending:
            record = await self.store.get_response(response_id, scope)
            if record is None:
                continue
            snapshot = await self._background_snapshot(record)
            if snapshot is None or snapshot["status"] in PENDING_STATUSES:
                still.append(response_id)
                continue
            if snapshot["status"] == "completed":
                await self.store.add_items(found.id, _stored_output(snapshot))
            if record.checkpoint_id is not None:
                # The worker ran the turn on the thread: it now holds everything so far.
                heads[record.model] = ""
                seen[record.model] = len(await self.store.all_items(found.id))
        if still != found.pending:
            found = found.model_copy(update={"pending": still, "heads": heads, "seen": seen})
            await self.store.put_conversation(found)
        if still and param == "conversation":
            raise ConflictError(
                "Another response is in progress for this conversation; wait for it to finish.",
                param="conversation",
                code="conversation_busy",
            )
        return found

    # -- after a run ----------------------------------------------------------------------

    async def remember(
        self,
        prepared: PreparedResponse,
        scope: str,
        response: ResponseObject,
        *,
        checkpoint_id: str | None = None,
        events: Sequence[StreamEvent] | None = None,
    ) -> None:
        """Keep a finished foreground Response (when stored) and extend its conversation."""
        turn = prepared.turn
        if not (turn.store or turn.conversation_id or prepared.plan.keep_thread):
            return
        assert prepared.decoded is not None  # the API's request (a worker records nothing)
        input_items = items.input_items(prepared.decoded.body)
        if turn.store:
            # Built here from the Response just made, which nothing needs to check again.
            await self.store.put_response(
                StoredResponse(
                    id=response["id"],
                    owner_scope=scope,
                    model=prepared.model,
                    created_at=response["created_at"],
                    input_items=input_items,
                    history=list(turn.history),
                    response=response,
                    stream=events is not None,
                    events_key=response["id"] if events is not None else None,
                    conversation_id=turn.conversation_id,
                    checkpoint_id=checkpoint_id,
                )
            )
            if events:
                await self.store.events.append(response["id"], events)
        await self._extend(prepared, scope, input_items, response, checkpoint_id)

    async def remember_background(
        self,
        prepared: PreparedResponse,
        scope: str,
        response_id: str,
        opening: tuple[str, Sequence[StreamEvent]] | None = None,
    ) -> None:
        """Index a submitted background Response; its result stays with the engine.
        `opening`: a streamed run's first events and the key of its log, which must be this
        store's log: appended with the record, in one write."""
        turn = prepared.turn
        assert prepared.decoded is not None  # the API's request
        input_items = items.input_items(prepared.decoded.body)
        parsed = ids.parse_run_response_id(response_id)
        record = StoredResponse(
            id=response_id,
            owner_scope=scope,
            model=prepared.model,
            input_items=input_items,
            history=list(turn.history),
            background=True,
            stream=prepared.decoded.stream,
            events_key=parsed.nonce if parsed is not None else None,
            conversation_id=turn.conversation_id,
            checkpoint_id="" if prepared.plan.keep_thread else None,
        )
        if opening is None:
            await self.store.put_response(record)
        else:
            await self.store.put_response_and_log(record, *opening)
        if turn.conversation_id is not None:
            found = await self.store.get_conversation(turn.conversation_id, scope)
            if found is not None:
                await self.store.add_items(found.id, input_items)
                pending = [*found.pending, response_id]
                await self.store.put_conversation(
                    found.model_copy(update={"pending": pending, "updated_at": now()})
                )
        if prepared.plan.keep_thread and prepared.plan.run_id is not None:
            await self.store.touch_thread(self._thread(prepared, scope))

    async def _extend(
        self,
        prepared: PreparedResponse,
        scope: str,
        input_items: list[StoredItem],
        response: ResponseObject,
        checkpoint_id: str | None,
    ) -> None:
        turn = prepared.turn
        keeps_thread = prepared.plan.keep_thread and prepared.plan.run_id is not None
        if keeps_thread:
            await self.store.touch_thread(self._thread(prepared, scope))
        if turn.conversation_id is None:
            return
        found = await self.store.get_conversation(turn.conversation_id, scope)
        if found is None:  # deleted while the turn ran
            return
        output = _stored_output(response) if response["status"] == "completed" else []
        added: list[StoredItem] = [*input_items, *output]
        await self.store.add_items(found.id, added)
        update: dict[str, object] = {"updated_at": now()}
        if keeps_thread and checkpoint_id is not None:
            total = len(turn.history) + len(added)
            update["heads"] = {**found.heads, prepared.model: checkpoint_id}
            update["seen"] = {**found.seen, prepared.model: total}
        await self.store.put_conversation(found.model_copy(update=update))

    def _thread(self, prepared: PreparedResponse, scope: str) -> str:
        assert prepared.plan.run_id is not None
        return checkpoint_thread_id(scope, prepared.model, prepared.plan.run_id)

    # -- reading back ---------------------------------------------------------------------

    async def get(self, response_id: str, scope: str) -> StoredResponse:
        record = await self.store.get_response(response_id, scope)
        if record is None:
            raise not_found(response_id)
        return record

    async def output_of(
        self, record: StoredResponse, scope: str, *, param: str = "response_id"
    ) -> list[StoredItem]:
        """A stored Response's output items; a background one must have finished."""
        snapshot = as_response(record.response) if record.response is not None else None
        if snapshot is None:
            snapshot = await self._background_snapshot(record)
            if snapshot is None or snapshot["status"] in PENDING_STATUSES:
                raise InvalidRequestError(
                    f"Response with id '{record.id}' has not finished yet; wait for it to end.",
                    param=param,
                    code="response_in_progress",
                )
        if snapshot["status"] != "completed":
            return []
        return _stored_output(snapshot)

    async def known_output(self, record: StoredResponse) -> list[StoredItem]:
        """The output of a paused Response being answered, as far as it is still known. The
        run holds the question, so the answer never waits on the engine: one that has forgotten
        the Response (an in-memory engine restarted) leaves the pause out of the history."""
        snapshot = (
            as_response(record.response)
            if record.response
            else await self._background_snapshot(record)
        )
        if snapshot is None or snapshot["status"] != "completed":
            return []
        return _stored_output(snapshot)

    async def _background_snapshot(self, record: StoredResponse) -> ResponseObject | None:
        parsed = ids.parse_run_response_id(record.id)
        if parsed is None or self.background is None:
            return None
        run = await self.background.get(parsed.nonce)
        if run is None:
            return None
        # A run that ended by its log (its engine records the end later) has ended here too.
        ended = await logged_end(run, self.background) or run.response
        return as_response(ended) if ended is not None else None

    async def input_items(self, response_id: str, scope: str, page: Page) -> ItemList:
        record = await self.get(response_id, scope)
        chosen, more = paginate(
            as_items(record.input_items), after=page.after, limit=page.limit, order=page.order
        )
        return items.item_list(chosen, more)

    async def delete(self, response_id: str, scope: str) -> DeletedResponse:
        if not await self.store.delete_response(response_id, scope):
            raise not_found(response_id)
        # The store deleted the events of a foreground stream (kept under the Response id); a
        # background run's are kept under its engine run id, in the engine's log.
        parsed = ids.parse_run_response_id(response_id)
        log = event_log(self.background)
        if parsed is not None and log is not None:
            await log.delete([parsed.nonce])
        return {"id": response_id, "object": "response", "deleted": True}

    async def delete_threads(self, scope: str, run_id: str) -> None:
        """Delete the checkpoints of every thread-keeping graph's thread for this run id."""
        for model in self.registry.model_ids:
            config = self.registry.graphs[model]
            if config.keeps_thread:
                await delete_thread(config, checkpoint_thread_id(scope, model, run_id))
                await self.store.forget_thread(checkpoint_thread_id(scope, model, run_id))


async def delete_thread(config: GraphConfig, thread_id: str) -> None:
    graph = await config.resolve_graph()
    remove = getattr(graph.checkpointer, "adelete_thread", None)
    if remove is not None:
        await remove(thread_id)


def _stored_output(response: ResponseObject) -> list[StoredItem]:
    """A Response's output items, which are valid conversation items and input as they are."""
    return [item.copy() for item in response.get("output") or []]
