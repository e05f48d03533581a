"""LGOS: serve LangGraph graphs as OpenAI-compatible models.

The front door: everything a host application needs is importable from here. Integrations
stay behind their own subpackages (`lgos.integrations.postgres`, `.dbos`, `.hatchet`,
`.langfuse`), so `import lgos` needs only the core dependencies.
"""

from lgos.background.executor import execute_background_job
from lgos.background.memory import InMemoryBackgroundBackend
from lgos.core.background import BackgroundBackend, BackgroundJob, BackgroundRun
from lgos.core.client_settings import ClientSettings
from lgos.core.coordinator import InMemoryRunCoordinator, RunCoordinator
from lgos.core.errors import (
    ConfigurationError,
    GraphError,
    InvalidAnswerError,
    InvalidRequestError,
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
from lgos.http.mount import LanggraphOpenaiServe
from lgos.run.expiry import delete_expired_interrupt_runs
from lgos.run.nodes import get_request, status_event
from lgos.server.app import create_app
from lgos.server.resources import ServerResources
from lgos.server.settings import ServerSettings

__all__ = [
    "AllowedTools",
    "BackgroundBackend",
    "BackgroundJob",
    "BackgroundRun",
    "ClientFunctionTool",
    "ClientSettings",
    "ConfigurationError",
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
    "ResponseFormat",
    "RunCoordinator",
    "ServerResources",
    "ServerSettings",
    "create_app",
    "delete_expired_interrupt_runs",
    "execute_background_job",
    "get_request",
    "status_event",
]
