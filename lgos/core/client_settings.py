"""Per-request client settings (`metadata.lgos_settings`)."""

from __future__ import annotations

import json
from typing import ClassVar, Self

from pydantic import BaseModel, ConfigDict, JsonValue, ValidationError

from lgos.core import safe_json
from lgos.core.errors import ConfigurationError, InvalidRequestError
from lgos.core.json_schema import JsonSchema

# The metadata key a client sends its settings under (the Responses API, A2A messages, MCP).
SETTINGS_KEY = "lgos_settings"
SETTINGS_PARAM = f"metadata.{SETTINGS_KEY}"


class ClientSettings(BaseModel):
    """Base class for the settings a client may change per request.

    Subclass it, give every field a default, and register the subclass on `GraphConfig`.
    Clients send only the values that differ from the defaults, as a JSON object string in
    `metadata.lgos_settings`; it is validated strictly on every request and never persisted.
    """

    model_config = ConfigDict(strict=True, frozen=True, extra="forbid", validate_default=True)

    _schema_cache: ClassVar[JsonSchema | None] = None

    @classmethod
    def check_definition(cls) -> None:
        """Fail at start-up when a subclass cannot serve as client settings."""
        missing = [name for name, field in cls.model_fields.items() if field.is_required()]
        if missing:
            raise ConfigurationError(
                f"{cls.__name__}: every client setting needs a default; missing for {missing}"
            )
        config = cls.model_config
        if not (config.get("strict") and config.get("frozen") and config.get("extra") == "forbid"):
            raise ConfigurationError(
                f"{cls.__name__}: keep ClientSettings' model_config (strict, frozen, extra=forbid)"
            )

    @classmethod
    def default_values(cls) -> dict[str, JsonValue]:
        return cls().model_dump(mode="json")

    @classmethod
    def json_schema(cls) -> JsonSchema:
        schema = cls.model_json_schema()
        return {"$schema": "https://json-schema.org/draft/2020-12/schema", **schema}

    @classmethod
    def from_metadata(cls, raw: str | None) -> Self:
        """Decode and validate `metadata.lgos_settings`; raise a 400 naming the problem."""
        if raw is None:
            return cls()
        try:
            values = safe_json.loads(raw)
        except safe_json.JSONLimitError as error:
            raise error.refusal(SETTINGS_PARAM) from None
        except json.JSONDecodeError as error:
            raise InvalidRequestError(
                f"Invalid '{SETTINGS_PARAM}': expected a JSON object string ({error.msg}).",
                param=SETTINGS_PARAM,
                code="invalid_value",
            ) from None
        if not isinstance(values, dict):
            raise InvalidRequestError(
                f"Invalid '{SETTINGS_PARAM}': expected a JSON object.",
                param=SETTINGS_PARAM,
                code="invalid_type",
            )
        try:
            # JSON mode keeps strictness sensible for JSON input (e.g. no "5" for an int).
            return cls.model_validate_json(json.dumps(values))
        except ValidationError as error:
            first = error.errors()[0]
            field = ".".join(str(part) for part in first["loc"]) or "settings"
            raise InvalidRequestError(
                f"Invalid runtime setting for {field}: {first['msg']}.",
                param=SETTINGS_PARAM,
                code="invalid_value",
            ) from None
