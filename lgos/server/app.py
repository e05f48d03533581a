"""`create_app`: the FastAPI application `lgos serve` runs, for tests and extension too."""

from __future__ import annotations

import asyncio
import gc
import inspect
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from datetime import timedelta

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from uvicorn.importer import ImportFromStringError, import_from_string

from lgos.core.background import BackgroundBackend
from lgos.core.errors import ConfigurationError
from lgos.core.registry import GraphFeature, GraphRegistry
from lgos.http.mount import LanggraphOpenaiServe
from lgos.run.expiry import delete_expired_interrupt_runs, expire_stored_responses
from lgos.server.resources import ServerResources, open_resources
from lgos.server.settings import ServerSettings

logger = logging.getLogger("lgos.server")

RegistryFactory = Callable[
    [ServerResources], GraphRegistry | AbstractAsyncContextManager[GraphRegistry]
]


def import_factory(path: str) -> RegistryFactory:
    """Import `module:attribute` with Uvicorn's importer, from the working directory first
    (as Uvicorn does); a bad path is a ConfigurationError naming it."""
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        factory = import_from_string(path)
    except (ImportFromStringError, ImportError) as error:
        raise ConfigurationError(f"registry {path!r}: {error}") from error
    if not callable(factory):
        raise ConfigurationError(f"registry {path!r} is not callable")
    return factory  # type: ignore[no-any-return]


@asynccontextmanager
async def open_registry(
    factory: RegistryFactory, resources: ServerResources
) -> AsyncIterator[GraphRegistry]:
    produced = factory(resources)
    if inspect.isawaitable(produced):
        produced = await produced
    if isinstance(produced, GraphRegistry):
        yield produced
        return
    if hasattr(produced, "__aenter__"):
        async with produced as registry:
            if not isinstance(registry, GraphRegistry):
                raise ConfigurationError("the registry factory must yield a GraphRegistry")
            yield registry
        return
    raise ConfigurationError("the registry factory must return a GraphRegistry")


@asynccontextmanager
async def open_background(
    settings: ServerSettings, registry: GraphRegistry, resources: ServerResources
) -> AsyncIterator[BackgroundBackend | None]:
    """The API side of the configured engine (None: background runs are off)."""
    if settings.BACKGROUND == "none":
        yield None
    elif settings.BACKGROUND == "memory":
        from lgos.background.memory import InMemoryBackgroundBackend

        memory = InMemoryBackgroundBackend(registry)
        async with memory.lifespan():
            yield memory
    elif settings.BACKGROUND == "dbos":
        from lgos.integrations.dbos import open_dbos_client

        async with open_dbos_client(require_postgres(settings), resources.events) as backend:
            yield backend
    else:
        from lgos.integrations.hatchet import open_hatchet_client

        async with open_hatchet_client(resources.events) as backend:
            yield backend


def require_postgres(settings: ServerSettings) -> str:
    """DBOS keeps its queue in PostgreSQL: the URI, or a ConfigurationError."""
    if not settings.POSTGRES_URI:
        raise ConfigurationError("LGOS_BACKGROUND=dbos needs LGOS_POSTGRES_URI")
    return settings.POSTGRES_URI


async def sweep_expired_interrupts(
    registry: GraphRegistry, resources: ServerResources, settings: ServerSettings
) -> None:
    interval = settings.INTERRUPT_SWEEP_INTERVAL_MINUTES * 60
    ttl = timedelta(minutes=settings.INTERRUPT_TTL_MINUTES)
    while True:
        await asyncio.sleep(interval)
        try:
            deleted = await delete_expired_interrupt_runs(
                resources.checkpointer, resources.run_coordinator, older_than=ttl
            )
            if deleted:
                logger.info("server.interrupt_expiry.deleted", extra={"deleted": deleted})
        except Exception:
            logger.exception("server.interrupt_expiry.failed")


def header_scope(header: str | None) -> Callable[[Request], str] | None:
    if header is None:
        return None

    def scope(request: Request) -> str:
        return request.headers.get(header) or "default"

    return scope


async def sweep_stored_responses(resources: ServerResources, settings: ServerSettings) -> None:
    assert resources.response_store is not None
    interval = settings.RESPONSE_SWEEP_INTERVAL_MINUTES * 60
    retention = timedelta(days=settings.RESPONSE_RETENTION_DAYS)
    while True:
        await asyncio.sleep(interval)
        try:
            deleted = await expire_stored_responses(
                resources.response_store, resources.checkpointer, older_than=retention
            )
            if deleted:
                logger.info("server.response_retention.deleted", extra={"deleted": deleted})
        except Exception:
            logger.exception("server.response_retention.failed")


def create_app(
    factory: RegistryFactory | str,
    *,
    settings: ServerSettings | None = None,
    freeze_startup_objects: bool = False,
) -> FastAPI:
    """Build the application: resources and registry open in its lifespan.

    `freeze_startup_objects` moves everything alive after start-up out of the garbage
    collector's sight (`gc.freeze`). Full collections otherwise re-walk the ~130k objects
    that imports and graphs leave behind, every few hundred requests: a quarter of the server's
    CPU per request in the benchmarks. `lgos serve` sets it; tests leave it off.
    """
    settings = settings or ServerSettings.from_environment()
    if isinstance(factory, str):
        factory = import_factory(factory)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            if settings.ENABLE_LANGFUSE:
                from lgos.integrations.langfuse import langfuse_tracing

                stack.enter_context(langfuse_tracing())
            resources = await stack.enter_async_context(open_resources(settings))
            registry = await stack.enter_async_context(open_registry(factory, resources))
            background = await stack.enter_async_context(
                open_background(settings, registry, resources)
            )
            LanggraphOpenaiServe(
                registry,
                app,
                owner_scope=header_scope(settings.SCOPE_HEADER),
                background=background,
                store=resources.response_store,
                store_by_default=settings.STORE_RESPONSES,
            ).bind_openai_api(settings.OPENAI_API_PREFIX)
            sweepers: list[asyncio.Task[None]] = []
            if settings.RESPONSE_SWEEP_INTERVAL_MINUTES > 0 and resources.response_store:
                sweepers.append(asyncio.create_task(sweep_stored_responses(resources, settings)))
            sweeper = None
            if settings.INTERRUPT_SWEEP_INTERVAL_MINUTES > 0 and any(
                config.supports(GraphFeature.INTERRUPTS) for config in registry.graphs.values()
            ):
                sweeper = asyncio.create_task(
                    sweep_expired_interrupts(registry, resources, settings)
                )
            logger.info("server.initialized", extra={"models": list(registry.model_ids)})
            if freeze_startup_objects:
                gc.collect()
                gc.freeze()
            try:
                yield
            finally:
                if sweeper is not None:
                    sweepers.append(sweeper)
                for task in sweepers:
                    task.cancel()
                await asyncio.gather(*sweepers, return_exceptions=True)

    app = FastAPI(title="LGOS", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    if settings.CORS_ORIGINS:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.CORS_ORIGINS,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["*"],
            expose_headers=["X-Request-ID"],
        )
    return app


def app_from_environment() -> FastAPI:
    """The factory `lgos serve` hands to Uvicorn, so --reload and --workers can import it."""
    settings = ServerSettings.from_environment()
    if not settings.REGISTRY:
        raise ConfigurationError("LGOS_REGISTRY is not set")
    return create_app(settings.REGISTRY, settings=settings, freeze_startup_objects=True)
