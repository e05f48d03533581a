"""The registry factory, which `lgos serve` and `lgos worker` load by name:

    lgos serve {{ cookiecutter.project_slug }}.registry:create_registry

They call `create_registry` once at start-up with the resources their settings chose (in
memory by default; PostgreSQL with `LGOS_POSTGRES_URI`). Each entry is one OpenAI "model".
Add a graph: write it in `graphs/`, then give it a `GraphConfig` here.
"""

from __future__ import annotations

from lgos import GraphConfig, GraphFeature, GraphRegistry, ServerResources

from {{ cookiecutter.project_slug }}.graphs.approval import approval_graph
from {{ cookiecutter.project_slug }}.graphs.chat import (
    ChatSettings,
    chat_graph,
    fake_answer,
)
from {{ cookiecutter.project_slug }}.models import (
    FakeChatModel,
    ModelSettings,
    real_chat_model,
)

BACKGROUND = GraphFeature.BACKGROUND
INTERRUPTS = GraphFeature.INTERRUPTS


def create_registry(resources: ServerResources) -> GraphRegistry:
    return build_registry(resources, ModelSettings())


def build_registry(resources: ServerResources, model_settings: ModelSettings) -> GraphRegistry:
    """The registry with explicit model settings (the tests' entry point)."""
    model = real_chat_model(model_settings) or FakeChatModel(reply=fake_answer)
    return GraphRegistry(
        graphs={
            "chat": GraphConfig(
                graph=chat_graph(model),
                description="Answers in one streamed message; the tone is a client setting.",
                features=frozenset({BACKGROUND}),
                client_settings=ChatSettings,
            ),
            "approval": GraphConfig(
                # Only graphs declaring INTERRUPTS may use the checkpointer.
                graph=approval_graph(resources.checkpointer),
                description="Asks a person to approve an action before carrying it out.",
                features=frozenset({BACKGROUND, INTERRUPTS}),
            ),
        },
        run_coordinator=resources.run_coordinator,
    )
