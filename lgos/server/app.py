"""`create_app`: the FastAPI application `lgos serve` runs, for tests and extension too."""

from __future__ import annotations

import asyncio
import errno
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
from uvicorn.importer import ImportFromStringError, import_from_string

from lgos.core.background import BackgroundBackend
from lgos.core.errors import ConfigurationError
from lgos.core.registry import GraphFeature, GraphRegistry
from lgos.http.errors import install_error_envelopes
from lgos.http.mount import LanggraphOpenaiServe
from lgos.http.routes import RequestLimits
from lgos.run.expiry import delete_expired_interrupt_runs
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


FD_CHECK_SECONDS = 1.0
FD_REPORT_EVERY_SECONDS = 60.0


async def watch_file_descriptors(check_every: float = FD_CHECK_SECONDS) -> None:
    """Log when the process is out of file descriptors, and so refuses new connections.

    At the limit `accept()` fails inside the event loop (uvloop sheds the connection without a
    word), so the only sign would be clients timing out. The count comes from /proc, where it
    exists; elsewhere this does nothing.
    """
    import resource

    reported_at: float | None = None
    loop = asyncio.get_running_loop()
    while True:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
        open_count = _open_file_descriptors(soft)
        if open_count is None:
            return
        exhausted = soft != resource.RLIM_INFINITY and open_count >= soft - 8
        if exhausted and (
            reported_at is None or loop.time() - reported_at > FD_REPORT_EVERY_SECONDS
        ):
            logger.error(
                "server.connections.refused",
                extra={
                    "detail": "out of file descriptors: new connections are refused",
                    "open_file_descriptors": open_count,
                    "file_descriptor_limit": soft,
                },
            )
            reported_at = loop.time()
        elif not exhausted and reported_at is not None and open_count < soft * 0.9:
            logger.info(
                "server.connections.accepted_again",
                extra={"open_file_descriptors": open_count, "file_descriptor_limit": soft},
            )
            reported_at = None
        await asyncio.sleep(check_every)


def _open_file_descriptors(limit: int) -> int | None:
    """How many descriptors are open; None where /proc cannot tell."""
    try:
        return len(os.listdir("/proc/self/fd"))
    except OSError as error:
        # Listing the directory takes a descriptor too: failing for want of one is the answer.
        if error.errno in (errno.EMFILE, errno.ENFILE):
            return limit
        return None


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
            limits = RequestLimits(
                max_body_bytes=settings.MAX_BODY_BYTES,
                body_timeout_seconds=settings.BODY_TIMEOUT_SECONDS,
            )
            LanggraphOpenaiServe(
                registry, app, background=background, limits=limits
            ).bind_openai_api(settings.OPENAI_API_PREFIX)
            watcher = asyncio.create_task(watch_file_descriptors())
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
                watcher.cancel()
                if sweeper is not None:
                    sweeper.cancel()
                await asyncio.gather(watcher, *filter(None, [sweeper]), return_exceptions=True)

    app = FastAPI(title="LGOS", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    install_error_envelopes(app)
    if settings.CORS_ORIGINS:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.CORS_ORIGINS,
            allow_methods=["GET", "POST"],
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
