"""Background routes: create (queued), retrieve (poll) and cancel."""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from typing import Any

from opentelemetry import propagate
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from lgos import context
from lgos.background.executor import placeholder_snapshot
from lgos.background.protocol import (
    BackgroundBackend,
    BackgroundJob,
    BackgroundRun,
    digest,
    request_digest,
)
from lgos.errors import IdempotencyKeyReusedError, InvalidRequestError, NotFoundError
from lgos.registry import GraphFeature, GraphRegistry
from lgos.service import responses
from lgos.wire import ids
from lgos.wire.responses_request import IDEMPOTENCY_HEADERS, DecodedResponsesRequest

logger = logging.getLogger("lgos.background")

MAX_IDEMPOTENCY_KEY_LENGTH = 255


class BackgroundRoutes:
    def __init__(
        self,
        registry: GraphRegistry,
        backend: BackgroundBackend | None,
        scope: Callable[[Request], Awaitable[str]],
    ) -> None:
        self.registry = registry
        self.backend = backend
        self.scope = scope

    async def create(self, request: Request, decoded: DecodedResponsesRequest) -> Response:
        model = decoded.body.model
        config = self.registry.get(model)
        if self.backend is None:
            raise InvalidRequestError(
                "Background responses are not enabled on this server.",
                param="background",
                code="unsupported_value",
            )
        if not config.supports(GraphFeature.BACKGROUND):
            raise InvalidRequestError(
                f"The model '{model}' does not run in the background.",
                param="background",
                code="unsupported_value",
            )
        scope = await self.scope(request)
        # Everything the worker would reject for the request itself is rejected here, now.
        prepared = responses.prepare(self.registry, decoded)
        run_id = prepared.plan.run_id or ids.new_hex()
        key = _idempotency_key(request, decoded)
        raw = decoded.body.model_dump(mode="json", exclude_unset=True, exclude={"extra_headers"})
        trace_context: dict[str, str] = {}
        propagate.inject(trace_context)
        job = BackgroundJob(
            request=raw,
            owner_scope=scope,
            run_id=run_id,
            idempotency_key=digest(scope, key) if key else None,
            request_digest=request_digest(raw),
            trace_context=trace_context,
            request_id=context.current().get("request_id"),
        )
        run = await self.backend.submit(job)
        if run.job.request_digest != job.request_digest or run.job.owner_scope != scope:
            raise IdempotencyKeyReusedError()
        context.add(response_id=run.response_id, run_id=run.job.run_id)
        return JSONResponse(self.snapshot(run))

    async def retrieve(self, request: Request) -> Response:
        for name in ("stream", "starting_after"):
            if name in request.query_params:
                raise InvalidRequestError(
                    f"'{name}' is not supported: background responses are polling-only.",
                    param=name,
                    code="unsupported_parameter",
                )
        run = await self._owned_run(request)
        return JSONResponse(self.snapshot(run))

    async def cancel(self, request: Request) -> Response:
        run = await self._owned_run(request)
        if not run.terminal:
            assert self.backend is not None
            await self.backend.cancel(run.id)
            run = await self.backend.get(run.id) or run
        return JSONResponse(self.snapshot(run))

    async def _owned_run(self, request: Request) -> BackgroundRun:
        response_id = request.path_params["response_id"]
        context.add(response_id=response_id)
        parsed = ids.parse_run_response_id(response_id)
        run = None
        if parsed is not None and self.backend is not None:
            run = await self.backend.get(parsed.nonce)
        # A foreign id is indistinguishable from an unknown one.
        if (
            run is None
            or run.job.run_id != (parsed.run_id if parsed else None)
            or run.job.owner_scope != await self.scope(request)
        ):
            raise NotFoundError(f"Response with id '{response_id}' not found.", param="response_id")
        return run

    def snapshot(self, run: BackgroundRun) -> dict[str, Any]:
        if run.response is not None and run.status in ("completed", "failed", "incomplete"):
            return run.response
        status = run.status
        if status == "completed":  # finished but the result is missing: report it honestly
            status = "failed"
        return placeholder_snapshot(run.job, run.id, status)


def _idempotency_key(request: Request, decoded: DecodedResponsesRequest) -> str | None:
    key = None
    for name in IDEMPOTENCY_HEADERS:
        value = request.headers.get(name)
        if value is not None:
            key = value
            break
    if key is None:
        key = decoded.body_idempotency_key
    if key is None:
        return None
    if not 1 <= len(key) <= MAX_IDEMPOTENCY_KEY_LENGTH:
        raise InvalidRequestError(
            "Invalid 'Idempotency-Key': expected 1 to 255 characters.",
            param="Idempotency-Key",
            code="invalid_value",
        )
    return key
