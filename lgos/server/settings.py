"""`LGOS_*` settings of `lgos serve` and `lgos worker`."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Literal

from pydantic import Field, SecretStr, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict, SettingsError

from lgos.core.errors import ConfigurationError
from lgos.core.webhooks import WebhookEndpoint, WebhookSettings

PREFIX = "LGOS_"


class ServerSettings(BaseSettings):
    """Read from the process environment. An empty value counts as unset.

    Tests pass values explicitly (`ServerSettings(POSTGRES_URI=None, ...)`); explicit values win
    over the environment, so a developer's variables cannot leak into a test.
    """

    model_config = SettingsConfigDict(
        env_prefix=PREFIX, env_ignore_empty=True, frozen=True, extra="ignore"
    )

    REGISTRY: str | None = Field(default=None, description="module:attribute of the factory")
    CORS_ORIGINS: list[str] = Field(default_factory=list)
    POSTGRES_URI: str | None = None
    POSTGRES_POOL_SIZE: int = Field(default=10, ge=2)
    # How long a request waits for a database connection before it checks that the database
    # answers: 503 with Retry-After if not (it restarted or is down), else it waits on (the
    # pool is only busy); docs/server.md.
    POSTGRES_WAIT_SECONDS: float = Field(default=5.0, gt=0)
    INTERRUPT_TTL_MINUTES: int = Field(default=43200, ge=1)
    INTERRUPT_SWEEP_INTERVAL_MINUTES: float = Field(default=5, ge=0)
    BACKGROUND: Literal["none", "memory", "dbos", "hatchet"] = "memory"
    WORKER_SLOTS: int = Field(default=4, ge=1)
    BACKGROUND_RETENTION_DAYS: float = Field(default=30, gt=0)
    # What an omitted `store` means on POST /v1/responses (OpenAI's default: true). Operators
    # who must not keep content set it false; clients may still ask for store=true.
    STORE_RESPONSES: bool = True
    # Stored Responses, Conversations and the threads of thread-keeping graphs unused for
    # this long are deleted (OpenAI keeps Responses 30 days).
    RESPONSE_RETENTION_DAYS: float = Field(default=30, gt=0)
    RESPONSE_SWEEP_INTERVAL_MINUTES: float = Field(default=60, ge=0)
    # How long an Idempotency-Key of a foreground create (a Response, a chat completion, a
    # Conversation or its items) answers with its first outcome; swept with stored Responses.
    IDEMPOTENCY_TTL_HOURS: float = Field(default=24, gt=0)
    ENABLE_LANGFUSE: bool = False
    # Limits on what one client may send (docs/server.md, "Limits"). The defaults keep ten
    # concurrent hostile clients well inside a small (2-core) host's memory.
    MAX_BODY_BYTES: int = Field(default=4 * 1024 * 1024, ge=1024)
    BODY_TIMEOUT_SECONDS: float = Field(default=60.0, gt=0)
    MAX_HEADER_BYTES: int = Field(default=32 * 1024, ge=1024)
    HEADER_TIMEOUT_SECONDS: float = Field(default=15.0, gt=0)
    OPENAI_API_PREFIX: str = "/v1"
    # A request header naming the owner scope (the tenant), set by a trusted gateway in
    # front of the API; it separates stored Responses, Conversations, pauses and background
    # runs. Unset: one shared scope.
    SCOPE_HEADER: str | None = None
    # Bearer keys, each naming the owner it acts as: `owner=key` entries, comma- or
    # newline-separated, here or one per line in the file (docs/security.md). Either set: every
    # route but /health needs a key. Neither: anyone who reaches the port is the shared owner.
    API_KEYS: SecretStr | None = None
    API_KEYS_FILE: Path | None = None
    # Whether /models, /models/{id}, /version and the A2A agent cards answer without a key.
    PUBLIC_MODELS: bool = False
    # The graphs as MCP tools (Streamable HTTP) at this path, beside the OpenAI API; needs the
    # `mcp` extra. docs/mcp-a2a.md.
    ENABLE_MCP: bool = True
    MCP_PATH: str = "/mcp"
    # The graphs as A2A agents (JSON-RPC), one under this path per graph; needs the `a2a`
    # extra. docs/mcp-a2a.md.
    ENABLE_A2A: bool = True
    A2A_PATH: str = "/a2a"
    # Completion webhooks of background Responses (docs/background.md, "Webhooks"): a JSON
    # list of `{"url", "secret": "whsec_...", "events": [...]}`; empty: none are sent.
    WEBHOOKS: list[WebhookEndpoint] = Field(default_factory=list)
    WEBHOOK_MAX_ATTEMPTS: int = Field(default=12, ge=1)
    WEBHOOK_FIRST_DELAY_SECONDS: float = Field(default=1.0, gt=0)
    WEBHOOK_MAX_DELAY_SECONDS: float = Field(default=600.0, gt=0)
    WEBHOOK_TIMEOUT_SECONDS: float = Field(default=10.0, gt=0)

    @field_validator("OPENAI_API_PREFIX")
    @classmethod
    def _prefix(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError("must start with '/'")
        return value.rstrip("/") or "/"

    @field_validator("MCP_PATH", "A2A_PATH")
    @classmethod
    def _mcp_path(cls, value: str) -> str:
        if not value.startswith("/") or value.rstrip("/") == "":
            raise ValueError("must start with '/' and name a path, such as '/mcp' or '/a2a'")
        return value.rstrip("/")

    def webhooks(self) -> WebhookSettings | None:
        """What the engines deliver with; None when no endpoint is configured."""
        if not self.WEBHOOKS:
            return None
        return WebhookSettings(
            endpoints=tuple(self.WEBHOOKS),
            max_attempts=self.WEBHOOK_MAX_ATTEMPTS,
            first_delay_seconds=self.WEBHOOK_FIRST_DELAY_SECONDS,
            max_delay_seconds=self.WEBHOOK_MAX_DELAY_SECONDS,
            timeout_seconds=self.WEBHOOK_TIMEOUT_SECONDS,
        )

    @classmethod
    def from_environment(cls, **overrides: Any) -> ServerSettings:
        """Read the environment; a bad value raises ConfigurationError with a one-line
        message naming the variable, for the command to print instead of a traceback."""
        try:
            return cls(**overrides)
        except ValidationError as error:
            raise ConfigurationError(_describe(error)) from None
        except SettingsError as error:
            # Raised before validation when a JSON list (LGOS_CORS_ORIGINS) does not parse.
            field = _field_in(str(error))
            name = PREFIX + field if field else "an LGOS_* variable"
            raise ConfigurationError(f"{name}: expected a JSON list, such as '[\"a\"]'") from None


def _describe(error: ValidationError) -> str:
    problems = []
    for item in error.errors():
        field = ".".join(str(part) for part in item["loc"][:1])
        name = PREFIX + field
        raw = os.environ.get(name)
        # Values that may hold credentials (a URI's password, API keys, a webhook secret) are
        # not shown.
        hidden = "URI" in field or "KEYS" in field or field == "WEBHOOKS"
        shown = f"{name}={raw}" if raw is not None and not hidden else name
        problems.append(f"{shown}: {item['msg']}")
    return "; ".join(problems)


def _field_in(message: str) -> str | None:
    for field in ServerSettings.model_fields:
        if f'"{field}"' in message:
            return field
    return None
