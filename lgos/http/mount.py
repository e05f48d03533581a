"""`LanggraphOpenaiServe`: mount the OpenAI API for a registry on a FastAPI app."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from fastapi import FastAPI
from starlette.routing import BaseRoute

from lgos.core.background import BackgroundBackend
from lgos.core.errors import ConfigurationError
from lgos.core.idempotency import IdempotencyStore
from lgos.core.registry import GraphRegistry
from lgos.core.stored import ResponseStore
from lgos.http.auth import (
    Authenticate,
    AuthenticationGate,
    OwnerScopeResolver,
    as_authenticate,
    owner_of,
)
from lgos.http.body import RequestLimits
from lgos.http.routes import OpenAIRoutes
from lgos.service.idempotency import DEFAULT_TTL_SECONDS, Idempotency

# Where an A2A agent's card is (public with the model listing, for discovery).
AGENT_CARD = "/.well-known/agent-card.json"


class LanggraphOpenaiServe:
    """Binds the OpenAI-compatible routes of `registry` onto `app` (a new app if None).

    `authenticate` is the one authentication hook (`lgos.http.auth`): an async
    `authenticate(request) -> owner` that may raise `AuthenticationError` (401) or
    `PermissionDeniedError` (403). It runs before every route but the health check (and the
    model listing, the version and the A2A cards when `public_models`), the MCP endpoint and
    the A2A agents included; the owner it returns owns every object the request creates and
    is the only one who reaches it again. Without it every request is one shared owner.
    `owner_scope` and `checkpoint_scope` are older names of the same hook (which may also
    answer without awaiting); pass one of the three.

    `store` keeps stored Responses and Conversations (in this process's memory when None);
    `store_by_default` is what an omitted `store` means (OpenAI's default: true).
    `idempotency_store` keeps the Idempotency-Keys of foreground creates, each answering with
    its first outcome for `idempotency_ttl_seconds` (in this process's memory when None).
    """

    def __init__(
        self,
        registry: GraphRegistry,
        app: FastAPI | None = None,
        checkpoint_scope: OwnerScopeResolver | None = None,
        background: BackgroundBackend | None = None,
        *,
        owner_scope: OwnerScopeResolver | None = None,
        authenticate: Authenticate | None = None,
        public_models: bool = False,
        ping_interval: float = 15.0,
        limits: RequestLimits | None = None,
        store: ResponseStore | None = None,
        store_by_default: bool = True,
        idempotency_store: IdempotencyStore | None = None,
        idempotency_ttl_seconds: float = DEFAULT_TTL_SECONDS,
    ) -> None:
        given = [hook for hook in (authenticate, owner_scope, checkpoint_scope) if hook]
        if len(given) > 1:
            raise ConfigurationError("pass one of authenticate, owner_scope or checkpoint_scope")
        self.authenticate = as_authenticate(given[0]) if given else None
        self.public_models = public_models
        self.registry = registry
        self.app = app if app is not None else FastAPI(title="LGOS")
        self.routes = OpenAIRoutes(
            registry,
            self.authenticate,
            background,
            ping_interval,
            store=store,
            store_by_default=store_by_default,
            limits=limits,
            idempotency=Idempotency(idempotency_store, idempotency_ttl_seconds),
            public_models=public_models,
        )
        # The protocols read the owner the gate in front of them found (`_add_protocol_routes`).
        self.owner_scope: OwnerScopeResolver | None = owner_of if self.authenticate else None
        self.max_body_bytes = (limits or RequestLimits()).max_body_bytes
        self.mcp: Any = None  # the McpEndpoint, once bound
        self.a2a: Any = None  # the A2aEndpoint, once bound
        self._catch_all: BaseRoute | None = None  # the OpenAI API's unknown-path route, once bound

    def bind_mcp(
        self, path: str = "/mcp", allowed_origins: Sequence[str] = ()
    ) -> LanggraphOpenaiServe:
        """The same graphs as MCP tools at `path` (needs the `mcp` extra); browser pages are
        refused unless their origin is loopback or in `allowed_origins`. The host's lifespan
        must enter `self.mcp.lifespan()`, which runs the MCP session manager."""
        from lgos.protocols.mcp import McpEndpoint

        self.mcp = McpEndpoint(
            self.registry,
            self.owner_scope,
            max_body_bytes=self.max_body_bytes,
            allowed_origins=allowed_origins,
            background=self.routes.background,
        )
        self._add_protocol_routes(self.mcp.routes(path))
        return self

    def bind_a2a(
        self, path: str = "/a2a", allowed_origins: Sequence[str] = ()
    ) -> LanggraphOpenaiServe:
        """The same graphs as A2A agents under `path` (needs the `a2a` extra): one per graph
        at `<path>/<model>`, its card at `<path>/<model>/.well-known/agent-card.json`. The
        host's lifespan must enter `self.a2a.lifespan()`, which stops running tasks."""
        from lgos.protocols.a2a import A2aEndpoint

        self.a2a = A2aEndpoint(
            self.registry,
            self.owner_scope,
            max_body_bytes=self.max_body_bytes,
            allowed_origins=allowed_origins,
            background=self.routes.background,
        )
        self._add_protocol_routes(self.a2a.routes(path))
        return self

    def bind_openai_api(self, prefix: str = "/v1") -> LanggraphOpenaiServe:
        prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
        # Routes join the host app's own router: one middleware stack, not a mounted sub-app.
        routes = self.routes.routes(prefix)
        self.app.router.routes.extend(routes)
        self._catch_all = routes[-1]
        return self

    def _add_protocol_routes(self, routes: list[BaseRoute]) -> None:
        """Just before the OpenAI API's catch-all (prefix "/" would shadow them otherwise), or
        first when it is not bound yet. Not first in every case: the router tries routes in
        order, and every OpenAI request would first be tested against each of these (two per
        graph for A2A)."""
        if self.authenticate is not None:
            for route in routes:
                if self.public_models and getattr(route, "path", "").endswith(AGENT_CARD):
                    continue
                # What a Route's own `middleware=` does: wrap the app it calls.
                route.app = AuthenticationGate(route.app, self.authenticate)  # type: ignore[attr-defined]
        table = self.app.router.routes
        at = table.index(self._catch_all) if self._catch_all in table else 0
        table[at:at] = routes
