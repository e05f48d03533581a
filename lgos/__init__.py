"""LGOS: serve LangGraph graphs as OpenAI-compatible models.

The front door, and the only one: everything a host application needs is importable from here
(`lgos.server` and the other layers are the library's inside). Integrations
stay behind their own subpackages (`lgos.integrations.postgres`, `.dbos`, `.hatchet`,
`.langfuse`), so `import lgos` needs only the core dependencies.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from lgos.background.executor import execute_background_job
    from lgos.background.memory import InMemoryBackgroundBackend
    from lgos.core.background import BackgroundBackend, BackgroundJob, BackgroundRun
    from lgos.core.client_settings import ClientSettings
    from lgos.core.coordinator import InMemoryRunCoordinator, RunCoordinator
    from lgos.core.errors import (
        AuthenticationError,
        ConfigurationError,
        GraphError,
        InvalidAnswerError,
        InvalidRequestError,
        PermissionDeniedError,
    )
    from lgos.core.registry import GraphConfig, GraphFeature, GraphRegistry
    from lgos.core.request import (
        AllowedTools,
        ClientFunctionTool,
        GraphRequest,
        HostedToolChoice,
        NamedToolChoice,
        ResponseFormat,
    )
    from lgos.http.auth import ApiKeys, Authenticate, GatewayUsers, TrustedHeader, bearer_token
    from lgos.http.mount import LanggraphOpenaiServe
    from lgos.run.expiry import delete_expired_interrupt_runs
    from lgos.run.nodes import get_request, status_event
    from lgos.server.app import create_app
    from lgos.server.resources import ServerResources, open_resources
    from lgos.server.settings import ServerSettings

# Each public name (`__all__`) and its module, imported on first use: a worker's
# `import lgos.background.executor` then loads what a worker needs, and not the HTTP layer
# or the request decoders.
_EXPORTS: dict[str, str] = {
    "AllowedTools": "lgos.core.request",
    "ApiKeys": "lgos.http.auth",
    "Authenticate": "lgos.http.auth",
    "AuthenticationError": "lgos.core.errors",
    "BackgroundBackend": "lgos.core.background",
    "BackgroundJob": "lgos.core.background",
    "BackgroundRun": "lgos.core.background",
    "ClientFunctionTool": "lgos.core.request",
    "ClientSettings": "lgos.core.client_settings",
    "ConfigurationError": "lgos.core.errors",
    "GatewayUsers": "lgos.http.auth",
    "GraphConfig": "lgos.core.registry",
    "GraphError": "lgos.core.errors",
    "GraphFeature": "lgos.core.registry",
    "GraphRegistry": "lgos.core.registry",
    "GraphRequest": "lgos.core.request",
    "HostedToolChoice": "lgos.core.request",
    "InMemoryBackgroundBackend": "lgos.background.memory",
    "InMemoryRunCoordinator": "lgos.core.coordinator",
    "InvalidAnswerError": "lgos.core.errors",
    "InvalidRequestError": "lgos.core.errors",
    "LanggraphOpenaiServe": "lgos.http.mount",
    "NamedToolChoice": "lgos.core.request",
    "PermissionDeniedError": "lgos.core.errors",
    "ResponseFormat": "lgos.core.request",
    "RunCoordinator": "lgos.core.coordinator",
    "ServerResources": "lgos.server.resources",
    "ServerSettings": "lgos.server.settings",
    "create_app": "lgos.server.app",
    "delete_expired_interrupt_runs": "lgos.run.expiry",
    "execute_background_job": "lgos.background.executor",
    "get_request": "lgos.run.nodes",
    "open_resources": "lgos.server.resources",
    "status_event": "lgos.run.nodes",
    "TrustedHeader": "lgos.http.auth",
    "bearer_token": "lgos.http.auth",
}
__all__ = [
    "AllowedTools",
    "ApiKeys",
    "Authenticate",
    "AuthenticationError",
    "BackgroundBackend",
    "BackgroundJob",
    "BackgroundRun",
    "ClientFunctionTool",
    "ClientSettings",
    "ConfigurationError",
    "GatewayUsers",
    "GraphConfig",
    "GraphError",
    "GraphFeature",
    "GraphRegistry",
    "GraphRequest",
    "HostedToolChoice",
    "InMemoryBackgroundBackend",
    "InMemoryRunCoordinator",
    "InvalidAnswerError",
    "InvalidRequestError",
    "LanggraphOpenaiServe",
    "NamedToolChoice",
    "PermissionDeniedError",
    "ResponseFormat",
    "RunCoordinator",
    "ServerResources",
    "ServerSettings",
    "TrustedHeader",
    "bearer_token",
    "create_app",
    "delete_expired_interrupt_runs",
    "execute_background_job",
    "get_request",
    "open_resources",
    "status_event",
]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'lgos' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value  # later reads skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *_EXPORTS})
