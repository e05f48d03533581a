"""`LGOS_*` settings of `lgos serve` and `lgos worker`."""

from __future__ import annotations

from typing import Literal

from pydantic import Field, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict


class ServerSettings(BaseSettings):
    """Read from the process environment. An empty value counts as unset.

    Tests pass values explicitly (`ServerSettings(POSTGRES_URI=None, ...)`); explicit values win
    over the environment, so a developer's variables cannot leak into a test.
    """

    model_config = SettingsConfigDict(
        env_prefix="LGOS_", env_ignore_empty=True, frozen=True, extra="ignore"
    )

    REGISTRY: str | None = Field(default=None, description="module:attribute of the factory")
    CORS_ORIGINS: list[str] = Field(default_factory=list)
    POSTGRES_URI: str | None = None
    POSTGRES_POOL_SIZE: int = Field(default=5, ge=1)
    INTERRUPT_TTL_MINUTES: int = Field(default=43200, ge=1)
    INTERRUPT_SWEEP_INTERVAL_MINUTES: float = Field(default=5, ge=0)
    BACKGROUND: Literal["none", "memory", "dbos", "hatchet"] = "memory"
    WORKER_SLOTS: int = Field(default=4, ge=1)
    BACKGROUND_RETENTION_DAYS: float = Field(default=30, gt=0)
    ENABLE_LANGFUSE: bool = False
    OPENAI_API_PREFIX: str = "/v1"

    @field_validator("OPENAI_API_PREFIX")
    @classmethod
    def _prefix(cls, value: str) -> str:
        if not value.startswith("/"):
            raise ValueError("must start with '/'")
        return value.rstrip("/") or "/"
