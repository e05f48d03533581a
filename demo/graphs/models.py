"""Which chat model the demo graphs call: a deterministic fake, or a configured real one.

By default every demo graph uses a scripted fake, so the stack runs with no API key and tests are
deterministic. Setting `DEMO_OPENAI_MODEL` (with `DEMO_OPENAI_API_KEY`, and `DEMO_OPENAI_BASE_URL`
for any OpenAI-compatible server) switches the graphs that would call a model to that model, through
`langchain-openai` (the optional `demo` extra: `uv sync --extra demo`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass

from langchain_core.language_models import BaseChatModel

from lgos import ConfigurationError

BASE_URL_VARIABLE = "DEMO_OPENAI_BASE_URL"
API_KEY_VARIABLE = "DEMO_OPENAI_API_KEY"
MODEL_VARIABLE = "DEMO_OPENAI_MODEL"


@dataclass(frozen=True, slots=True)
class RealModelConfig:
    model: str
    api_key: str
    base_url: str | None = None

    def __repr__(self) -> str:
        # Never print the key, e.g. in a start-up traceback.
        return f"RealModelConfig(model={self.model!r}, base_url={self.base_url!r})"


def real_model_config(environ: Mapping[str, str] | None = None) -> RealModelConfig | None:
    """The configured real model, or None for the fake.

    A half-configured environment is an error rather than a silent fallback: someone who set a
    base URL expects a real model, and a fake answer would look like a broken one.
    """
    env = os.environ if environ is None else environ
    model = env.get(MODEL_VARIABLE, "").strip()
    api_key = env.get(API_KEY_VARIABLE, "").strip()
    base_url = env.get(BASE_URL_VARIABLE, "").strip() or None
    if not model:
        if api_key or base_url:
            raise ConfigurationError(
                f"{API_KEY_VARIABLE} or {BASE_URL_VARIABLE} is set but {MODEL_VARIABLE} is not; "
                "set all of them for a real model, or none for the deterministic fake"
            )
        return None
    if not api_key:
        raise ConfigurationError(
            f"{MODEL_VARIABLE} is set but {API_KEY_VARIABLE} is not "
            "(a local server accepts any value)"
        )
    return RealModelConfig(model=model, api_key=api_key, base_url=base_url)


def openai_chat_model(config: RealModelConfig) -> BaseChatModel:
    """A `ChatOpenAI` for the configured server; imported lazily so the fake needs no extra."""
    try:
        from langchain_openai import ChatOpenAI
    except ImportError as error:
        raise ConfigurationError(
            f"{MODEL_VARIABLE} is set but langchain-openai is missing; "
            "install the demo extra (uv sync --extra demo)"
        ) from error
    from pydantic import SecretStr

    return ChatOpenAI(
        model=config.model,
        api_key=SecretStr(config.api_key),
        base_url=config.base_url,
        # Token usage in streamed answers too, so Responses report it.
        stream_usage=True,
        max_retries=1,
    )


def configured_real_model(environ: Mapping[str, str] | None = None) -> BaseChatModel | None:
    """The real model when configured, else None (the caller then uses its fake)."""
    config = real_model_config(environ)
    return openai_chat_model(config) if config is not None else None


def chat_model(fake: BaseChatModel, environ: Mapping[str, str] | None = None) -> BaseChatModel:
    """`fake`, unless a real model is configured."""
    return configured_real_model(environ) or fake
