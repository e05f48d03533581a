"""`/v1/models` objects with the `lgos` extension clients use to adapt their UI."""

from __future__ import annotations

from lgos.core.registry import GraphConfig, GraphRegistry
from lgos.wire.types.models import LgosModelInfo, ModelList, ModelObject

# A fixed creation time: graphs have no meaningful one, and a stable value keeps the listing
# cacheable by gateways.
CREATED = 1767225600
OWNER = "lgos"


def model_object(model_id: str, config: GraphConfig, *, detail: bool) -> ModelObject:
    extension: LgosModelInfo = {
        "description": config.description,
        "features": sorted(config.features),
        "server_tools": sorted(config.server_tools),
        "client_tools": sorted(config.client_tools),
        "hosted_tools": sorted(config.hosted_tools),
        "background_by_default": config.background_by_default,
    }
    if detail and config.client_settings is not None:
        extension["client_settings"] = {
            "json_schema": config.client_settings.json_schema(),
            "defaults": config.client_settings.default_values(),
        }
    return {
        "id": model_id,
        "object": "model",
        "created": CREATED,
        "owned_by": OWNER,
        "name": model_id,
        "description": config.description,
        "lgos": extension,
    }


def model_list(registry: GraphRegistry) -> ModelList:
    return {
        "object": "list",
        "data": [
            model_object(model_id, registry.graphs[model_id], detail=False)
            for model_id in registry.model_ids
        ],
    }
