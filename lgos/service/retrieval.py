"""Reading a Response back by id, stored or background: the store answers for the Responses it
holds (a foreground one whole, with its kept stream); a background Response, or an id the store
does not know, is the engine's (`service.background`)."""

from __future__ import annotations

from collections.abc import AsyncGenerator

from lgos.core import log_fields
from lgos.core.errors import InvalidRequestError
from lgos.core.stored import StoredResponse
from lgos.service.background import BackgroundResponses
from lgos.service.stateful import StatefulResponses
from lgos.wire import ids
from lgos.wire.types.events import StreamEvent, as_events
from lgos.wire.types.responses import ResponseObject, as_response


class ResponseRetrieval:
    """`GET /v1/responses/{id}` (polled or streamed) and its cancel, over one store and engine."""

    def __init__(self, stateful: StatefulResponses, background: BackgroundResponses) -> None:
        self.stateful = stateful
        self.background = background

    async def _record(self, response_id: str, scope: str) -> StoredResponse | None:
        log_fields.add(response_id=response_id)
        return await self.stateful.store.get_response(response_id, scope)

    async def retrieve(self, response_id: str, scope: str) -> ResponseObject:
        store = self.stateful.store
        parsed = ids.parse_run_response_id(response_id)
        if parsed is not None and self.background.logs_in(store.events):
            # The run's last logged event comes with the record, in one read (a poll of a
            # waiting run reads the log every time: its end, or that a worker started it).
            log_fields.add(response_id=response_id)
            record, last = await store.get_response_and_last(response_id, scope, parsed.nonce)
            if record is not None and (record.background or record.response is None):
                return await self.background.retrieve(
                    response_id, owner_scope=scope, indexed=True, last=last
                )
        else:
            record = await self._record(response_id, scope)
        if record is None or record.background or record.response is None:
            # Found in the store under this owner: not deleted, the engine need not be asked.
            indexed = record is not None
            return await self.background.retrieve(response_id, owner_scope=scope, indexed=indexed)
        return as_response(record.response)

    async def stream(
        self, response_id: str, scope: str, *, starting_after: int | None
    ) -> AsyncGenerator[StreamEvent]:
        record = await self._record(response_id, scope)
        if record is None or record.background:
            return await self.background.stream(
                response_id,
                owner_scope=scope,
                starting_after=starting_after,
                indexed=record is not None,
            )
        if not record.stream:
            raise InvalidRequestError(
                "You can only stream a stored response that was created with stream=true.",
                param="stream",
                code="invalid_value",
            )
        after = -1 if starting_after is None else starting_after
        return _replay(as_events(await self.stateful.store.events.read(response_id, after)))

    async def cancel(self, response_id: str, scope: str) -> ResponseObject:
        record = await self._record(response_id, scope)
        if record is not None and not record.background:
            raise InvalidRequestError(
                "Cannot cancel a synchronous response.", param="response_id", code="invalid_value"
            )
        return await self.background.cancel(
            response_id, owner_scope=scope, indexed=record is not None
        )


async def _replay(events: list[StreamEvent]) -> AsyncGenerator[StreamEvent]:
    for event in events:
        yield event
