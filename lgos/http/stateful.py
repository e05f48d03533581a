"""Routes of stored Responses (retrieve, replayed stream, delete, input items) and of the
Conversations API. Thin: the use cases are in `lgos.service.stateful` and `.conversations`."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response

from lgos.core import log_fields
from lgos.core.errors import InvalidRequestError
from lgos.http.body import RequestLimits, json_body
from lgos.http.rendering import JSON
from lgos.http.sse import named_event
from lgos.http.streaming import EventStreamResponse
from lgos.service.conversations import Conversations
from lgos.service.idempotency import Answer, CreateRequest, Idempotency
from lgos.service.retrieval import ResponseRetrieval
from lgos.service.stateful import Page, StatefulResponses
from lgos.wire import decoding, items, responses_decoder


class StatefulRoutes:
    """`/v1/responses/{id}` and its input items, cancel and delete."""

    def __init__(
        self,
        stateful: StatefulResponses,
        retrieval: ResponseRetrieval,
        scope: Callable[[Request], Awaitable[str]],
        ping_interval: float = 15.0,
    ) -> None:
        self.stateful = stateful
        self.retrieval = retrieval
        self.scope = scope
        self.ping_interval = ping_interval

    async def retrieve(self, request: Request) -> Response:
        response_id = request.path_params["response_id"]
        log_fields.add(response_id=response_id)
        query = responses_decoder.decode_retrieve_query(request.query_params)
        scope = await self.scope(request)
        if not query.stream:
            return JSON(await self.retrieval.retrieve(response_id, scope))
        events = await self.retrieval.stream(
            response_id, scope, starting_after=query.starting_after
        )
        # A client that leaves a background stream stops reading only: the run goes on.
        return EventStreamResponse(events, named_event, ping_interval=self.ping_interval)

    async def cancel(self, request: Request) -> Response:
        response_id = request.path_params["response_id"]
        return JSON(await self.retrieval.cancel(response_id, await self.scope(request)))

    async def delete(self, request: Request) -> Response:
        response_id = request.path_params["response_id"]
        log_fields.add(response_id=response_id)
        deleted = await self.stateful.delete(response_id, await self.scope(request))
        return JSON(deleted)

    async def input_items(self, request: Request) -> Response:
        response_id = request.path_params["response_id"]
        log_fields.add(response_id=response_id)
        listing = await self.stateful.input_items(
            response_id, await self.scope(request), page_params(request)
        )
        return JSON(listing)


def page_params(request: Request) -> Page:
    """`after`, `limit` (1 to 100, default 20) and `order` (asc or desc, default desc).
    `include[]` is accepted and ignored: no stored item has optional parts."""
    query = request.query_params
    raw_limit = query.get("limit")
    limit = items.DEFAULT_LIMIT
    if raw_limit is not None:
        try:
            limit = int(raw_limit)
        except ValueError:
            limit = 0
        if not 1 <= limit <= items.MAX_LIMIT:
            raise InvalidRequestError(
                f"Invalid 'limit': expected an integer from 1 to {items.MAX_LIMIT}.",
                param="limit",
                code="invalid_value",
            )
    order = query.get("order", "desc")
    if order not in ("asc", "desc"):
        raise InvalidRequestError(
            "Invalid 'order': expected 'asc' or 'desc'.", param="order", code="invalid_value"
        )
    return Page(after=query.get("after") or None, limit=limit, order=order)  # type: ignore[arg-type]


class ConversationRoutes:
    def __init__(
        self,
        conversations: Conversations,
        scope: Callable[[Request], Awaitable[str]],
        limits: RequestLimits,
        idempotency: Idempotency | None = None,
    ) -> None:
        self.conversations = conversations
        self.scope = scope
        self.limits = limits
        self.idempotency = idempotency or Idempotency()

    async def _once(
        self,
        request: Request,
        scope: str,
        created: CreateRequest,
        create: Callable[[], Awaitable[Answer]],
    ) -> Response:
        """A create that an Idempotency-Key makes retry-safe (`service.idempotency`)."""
        key = decoding.idempotency_key(request.headers)
        return JSON(await self.idempotency.once(scope, key, created, create))

    async def create(self, request: Request) -> Response:
        scope = await self.scope(request)
        body = await json_body(request, self.limits)

        async def create() -> Answer:
            return await self.conversations.create(scope, body)

        return await self._once(request, scope, ("conversations", body), create)

    async def retrieve(self, request: Request) -> Response:
        conversation_id = request.path_params["conversation_id"]
        return JSON(await self.conversations.retrieve(await self.scope(request), conversation_id))

    async def update(self, request: Request) -> Response:
        conversation_id = request.path_params["conversation_id"]
        body = await json_body(request, self.limits)
        return JSON(
            await self.conversations.update(await self.scope(request), conversation_id, body)
        )

    async def delete(self, request: Request) -> Response:
        conversation_id = request.path_params["conversation_id"]
        return JSON(await self.conversations.delete(await self.scope(request), conversation_id))

    async def list_items(self, request: Request) -> Response:
        conversation_id = request.path_params["conversation_id"]
        listing = await self.conversations.list_items(
            await self.scope(request), conversation_id, page_params(request)
        )
        return JSON(listing)

    async def add_items(self, request: Request) -> Response:
        conversation_id = request.path_params["conversation_id"]
        scope = await self.scope(request)
        body = await json_body(request, self.limits)

        async def add() -> Answer:
            return await self.conversations.add_items(scope, conversation_id, body)

        created = (f"conversations/{conversation_id}/items", body)
        return await self._once(request, scope, created, add)

    async def get_item(self, request: Request) -> Response:
        params = request.path_params
        return JSON(
            await self.conversations.get_item(
                await self.scope(request), params["conversation_id"], params["item_id"]
            )
        )

    async def delete_item(self, request: Request) -> Response:
        params = request.path_params
        return JSON(
            await self.conversations.delete_item(
                await self.scope(request), params["conversation_id"], params["item_id"]
            )
        )
