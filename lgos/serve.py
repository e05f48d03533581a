"""`LanggraphOpenaiServe`: mount the OpenAI API for a registry on a FastAPI app."""

from __future__ import annotations

from fastapi import FastAPI

from lgos.background.protocol import BackgroundBackend
from lgos.http.routes import OpenAIRoutes, ScopeResolver
from lgos.registry import GraphRegistry
from lgos.stored import ResponseStore


class LanggraphOpenaiServe:
    """Binds the OpenAI-compatible routes of `registry` onto `app` (a new app if None).

    `checkpoint_scope` resolves the server-trusted owner of a request (for example the
    authenticated tenant): it separates interrupt checkpoints and authorizes background
    retrieve/cancel. It defaults to one shared scope.

    `store` keeps stored Responses and Conversations (in this process's memory when None);
    `store_by_default` is what an omitted `store` means (OpenAI's default: true).
    """

    def __init__(
        self,
        registry: GraphRegistry,
        app: FastAPI | None = None,
        checkpoint_scope: ScopeResolver | None = None,
        background: BackgroundBackend | None = None,
        *,
        ping_interval: float = 15.0,
        store: ResponseStore | None = None,
        store_by_default: bool = True,
    ) -> None:
        self.registry = registry
        self.app = app if app is not None else FastAPI(title="LGOS")
        self.routes = OpenAIRoutes(
            registry,
            checkpoint_scope,
            background,
            ping_interval,
            store=store,
            store_by_default=store_by_default,
        )
        self.app.state.graph_registry = registry

    def bind_openai_api(self, prefix: str = "/v1") -> LanggraphOpenaiServe:
        prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
        # Routes join the host app's own router: one middleware stack, not a mounted sub-app.
        self.app.router.routes.extend(self.routes.routes(prefix))
        return self
