"""LGOS: serve LangGraph graphs as OpenAI-compatible models."""

from lgos.background.executor import execute_background_job
from lgos.background.memory import InMemoryBackgroundBackend
from lgos.background.protocol import BackgroundBackend, BackgroundJob, BackgroundRun
from lgos.errors import GraphError, InvalidAnswerError, InvalidRequestError
from lgos.events import status_event
from lgos.registry import GraphConfig, GraphFeature, GraphRegistry
from lgos.run.coordinator import (
    InMemoryRunCoordinator,
    RunCoordinator,
    delete_expired_interrupt_runs,
)
from lgos.run.request import ClientFunctionTool, GraphRequest, NamedToolChoice, get_request
from lgos.serve import LanggraphOpenaiServe
from lgos.settings import ClientSettings

__all__ = [
    "BackgroundBackend",
    "BackgroundJob",
    "BackgroundRun",
    "ClientFunctionTool",
    "ClientSettings",
    "GraphConfig",
    "GraphError",
    "GraphFeature",
    "GraphRegistry",
    "GraphRequest",
    "InMemoryBackgroundBackend",
    "InMemoryRunCoordinator",
    "InvalidAnswerError",
    "InvalidRequestError",
    "LanggraphOpenaiServe",
    "NamedToolChoice",
    "RunCoordinator",
    "delete_expired_interrupt_runs",
    "execute_background_job",
    "get_request",
    "status_event",
]
