"""`create_app`: the FastAPI application `lgos serve` runs, for tests and extension too."""

from __future__ import annotations

import asyncio
import dataclasses
import errno
import gc
import inspect
import logging
import os
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine
from contextlib import AbstractAsyncContextManager, AsyncExitStack, asynccontextmanager
from datetime import timedelta
from typing import Any

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware
from uvicorn.importer import ImportFromStringError, import_from_string

from lgos.core.background import BackgroundBackend
from lgos.core.errors import ConfigurationError
from lgos.core.registry import GraphFeature, GraphRegistry
from lgos.http.auth import ApiKeys, Authenticate, GatewayUsers, TrustedHeader
from lgos.http.body import RequestLimits
from lgos.http.errors import install_error_envelopes
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

        memory = InMemoryBackgroundBackend(registry, settings.webhooks())
        async with memory.lifespan():
            yield memory
    elif settings.BACKGROUND == "dbos":
        from lgos.integrations.dbos import open_dbos_client

        async with open_dbos_client(
            require_postgres(settings), resources.events, resources.pool, settings.webhooks()
        ) as backend:
            yield backend
    else:
        from lgos.integrations.hatchet import open_hatchet_client

        async with open_hatchet_client(resources.events, settings.webhooks()) as backend:
            yield backend


def require_postgres(settings: ServerSettings) -> str:
    """DBOS keeps its queue in PostgreSQL: the URI, or a ConfigurationError."""
    if not settings.POSTGRES_URI:
        raise ConfigurationError("LGOS_BACKGROUND=dbos needs LGOS_POSTGRES_URI")
    return settings.POSTGRES_URI


async def sweep_every(
    interval_minutes: float, name: str, sweep: Callable[[], Awaitable[int]]
) -> None:
    """Run one expiry sweep every interval for the life of the server; a failed sweep is
    logged and tried again next time."""
    while True:
        await asyncio.sleep(interval_minutes * 60)
        try:
            deleted = await sweep()
            if deleted:
                logger.info(f"server.{name}.deleted", extra={"deleted": deleted})
        except Exception:
            logger.exception(f"server.{name}.failed")


def sweep_expired_interrupts(
    resources: ServerResources, settings: ServerSettings
) -> Coroutine[Any, Any, None]:
    ttl = timedelta(minutes=settings.INTERRUPT_TTL_MINUTES)
    return sweep_every(
        settings.INTERRUPT_SWEEP_INTERVAL_MINUTES,
        "interrupt_expiry",
        lambda: delete_expired_interrupt_runs(
            resources.checkpointer, resources.run_coordinator, older_than=ttl
        ),
    )


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


def authenticate_from(settings: ServerSettings) -> Authenticate | None:
    """The hook the settings name: API keys, the trusted header, both (a gateway's key and the
    users it names), or none (anyone)."""
    keys = api_keys(settings)
    if keys is not None and settings.SCOPE_HEADER:
        # The key names the gateway; the header only names a user under it
        # (docs/design-choices.md).
        return GatewayUsers(keys, settings.SCOPE_HEADER)
    if keys is not None:
        return keys
    if settings.SCOPE_HEADER:
        return TrustedHeader(settings.SCOPE_HEADER)
    return None


def api_keys(settings: ServerSettings) -> ApiKeys | None:
    """LGOS_API_KEYS and LGOS_API_KEYS_FILE together (either may be unset)."""
    texts: list[tuple[str, str]] = []
    if settings.API_KEYS is not None:
        texts.append(("LGOS_API_KEYS", settings.API_KEYS.get_secret_value()))
    if settings.API_KEYS_FILE is not None:
        try:
            texts.append(("LGOS_API_KEYS_FILE", settings.API_KEYS_FILE.read_text()))
        except OSError as error:
            raise ConfigurationError(
                f"LGOS_API_KEYS_FILE={settings.API_KEYS_FILE}: {error.strerror}"
            ) from None
    if not texts:
        return None
    source = " and ".join(name for name, _ in texts)
    return ApiKeys.parse("\n".join(text for _, text in texts), source=source)


def sweep_stored_responses(
    resources: ServerResources, settings: ServerSettings
) -> Coroutine[Any, Any, None]:
    store = resources.response_store
    assert store is not None
    retention = timedelta(days=settings.RESPONSE_RETENTION_DAYS)
    return sweep_every(
        settings.RESPONSE_SWEEP_INTERVAL_MINUTES,
        "response_retention",
        lambda: expire_stored_responses(store, resources.checkpointer, older_than=retention),
    )


def create_app(
    factory: RegistryFactory | str,
    *,
    settings: ServerSettings | None = None,
    authenticate: Authenticate | None = None,
    freeze_startup_objects: bool = False,
) -> FastAPI:
    """Build the application: resources and registry open in its lifespan.

    `authenticate` is the host's own authentication hook (`lgos.http.auth`), in place of the
    API keys or trusted header the settings may name (not beside them).

    `freeze_startup_objects` moves everything alive after start-up out of the garbage
    collector's sight (`gc.freeze`). Full collections otherwise re-walk the ~130k objects
    that imports and graphs leave behind, every few hundred requests: a quarter of the server's
    CPU per request in the benchmarks. `lgos serve` sets it; tests leave it off.
    """
    settings = settings or ServerSettings.from_environment()
    if isinstance(factory, str):
        factory = import_factory(factory)
    configured = authenticate_from(settings)
    if authenticate is not None and configured is not None:
        raise ConfigurationError(
            "create_app(authenticate=...) replaces LGOS_API_KEYS and LGOS_SCOPE_HEADER: unset them"
        )
    authenticate = authenticate or configured

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with AsyncExitStack() as stack:
            if settings.ENABLE_LANGFUSE:
                from lgos.integrations.langfuse import langfuse_tracing

                stack.enter_context(langfuse_tracing())
            resources = await stack.enter_async_context(open_resources(settings))
            resources = dataclasses.replace(resources, app=app)
            registry = await stack.enter_async_context(open_registry(factory, resources))
            background = await stack.enter_async_context(
                open_background(settings, registry, resources)
            )
            limits = RequestLimits(
                max_body_bytes=settings.MAX_BODY_BYTES,
                body_timeout_seconds=settings.BODY_TIMEOUT_SECONDS,
            )
            serve = LanggraphOpenaiServe(
                registry,
                app,
                authenticate=authenticate,
                public_models=settings.PUBLIC_MODELS,
                background=background,
                store=resources.response_store,
                store_by_default=settings.STORE_RESPONSES,
                limits=limits,
                idempotency_store=resources.idempotency_store,
                idempotency_ttl_seconds=settings.IDEMPOTENCY_TTL_HOURS * 3600,
            ).bind_openai_api(settings.OPENAI_API_PREFIX)
            if settings.ENABLE_MCP and extra_installed("mcp", "ENABLE_MCP"):
                serve.bind_mcp(settings.MCP_PATH, allowed_origins=settings.CORS_ORIGINS)
                await stack.enter_async_context(serve.mcp.lifespan())
            if settings.ENABLE_A2A and extra_installed("a2a", "ENABLE_A2A"):
                serve.bind_a2a(settings.A2A_PATH, allowed_origins=settings.CORS_ORIGINS)
                await stack.enter_async_context(serve.a2a.lifespan())
            tasks = [asyncio.create_task(watch_file_descriptors())]
            if settings.RESPONSE_SWEEP_INTERVAL_MINUTES > 0 and resources.response_store:
                tasks.append(asyncio.create_task(sweep_stored_responses(resources, settings)))
            if settings.RESPONSE_SWEEP_INTERVAL_MINUTES > 0 and resources.idempotency_store:
                expired_keys = resources.idempotency_store.delete_expired
                interval = settings.RESPONSE_SWEEP_INTERVAL_MINUTES
                sweep = sweep_every(interval, "idempotency_expiry", expired_keys)
                tasks.append(asyncio.create_task(sweep))
            if settings.INTERRUPT_SWEEP_INTERVAL_MINUTES > 0 and any(
                config.supports(GraphFeature.INTERRUPTS) for config in registry.graphs.values()
            ):
                tasks.append(asyncio.create_task(sweep_expired_interrupts(resources, settings)))
            logger.info("server.initialized", extra={"models": list(registry.model_ids)})
            if freeze_startup_objects:
                gc.collect()
                gc.freeze()
            try:
                yield
            finally:
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)

    app = FastAPI(title="LGOS", lifespan=lifespan, docs_url=None, redoc_url=None, openapi_url=None)
    install_error_envelopes(app)
    if settings.CORS_ORIGINS:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=settings.CORS_ORIGINS,
            allow_methods=["GET", "POST", "DELETE"],
            allow_headers=["*"],
            expose_headers=["X-Request-ID"],
        )
    return app


def extra_installed(extra: str, setting: str) -> bool:
    """An agent protocol is on by default but an extra: without it the server goes on
    without it, and says so."""
    import importlib.util

    if importlib.util.find_spec(extra) is not None:
        return True
    logger.warning(
        f"server.{extra}.unavailable",
        extra={"detail": f"install lgos[{extra}] to serve it, or set LGOS_{setting}=false"},
    )
    return False


def app_from_environment() -> FastAPI:
    """The factory `lgos serve` hands to Uvicorn, so --reload and --workers can import it."""
    settings = ServerSettings.from_environment()
    if not settings.REGISTRY:
        raise ConfigurationError("LGOS_REGISTRY is not set")
    return create_app(settings.REGISTRY, settings=settings, freeze_startup_objects=True)
