"""Which chat model the graphs call: a deterministic fake, or a real OpenAI-compatible model.

With nothing configured, the graphs answer with `FakeChatModel`, so the service runs and its
tests pass with no API key and no network. For a real model, set:

- {{ cookiecutter.__env_prefix }}OPENAI_MODEL
- {{ cookiecutter.__env_prefix }}OPENAI_API_KEY
- {{ cookiecutter.__env_prefix }}OPENAI_BASE_URL (optional)

The base URL points at any server speaking the OpenAI API (vLLM, Ollama, a gateway).
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any, Self

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

PREFIX = "{{ cookiecutter.__env_prefix }}OPENAI_"


class ModelSettings(BaseSettings):
    """The real model's settings, read from the environment. All unset: the fake.

    Tests pass every field explicitly (`ModelSettings(model=None, api_key=None, base_url=None)`):
    explicit values win over the environment, so a developer's key never reaches a test.
    """

    model_config = SettingsConfigDict(
        env_prefix=PREFIX,
        env_ignore_empty=True,
        frozen=True,
        extra="ignore",
        # A validation error must not print the key it was given.
        hide_input_in_errors=True,
    )

    model: str | None = None
    api_key: SecretStr | None = None
    base_url: str | None = None

    @model_validator(mode="after")
    def _all_or_nothing(self) -> Self:
        # Half a configuration is a mistake, not a request for the fake: someone who set a key
        # expects a real model, and a fake answer would look like a broken one.
        if self.model is None and (self.api_key is not None or self.base_url is not None):
            raise ValueError(
                f"{PREFIX}API_KEY or {PREFIX}BASE_URL is set but {PREFIX}MODEL is not; set "
                "the model too, or unset them all for the deterministic fake"
            )
        if self.model is not None and self.api_key is None:
            raise ValueError(
                f"{PREFIX}MODEL is set but {PREFIX}API_KEY is not "
                "(a local server accepts any value)"
            )
        return self


def real_chat_model(settings: ModelSettings) -> BaseChatModel | None:
    """The configured OpenAI-compatible model, or None when none is configured."""
    if settings.model is None:
        return None
    from langchain_openai import ChatOpenAI  # only a real model needs it loaded

    return ChatOpenAI(
        model=settings.model,
        api_key=settings.api_key,
        base_url=settings.base_url,
        # Token counts in streamed answers too, so Responses report usage.
        stream_usage=True,
        max_retries=1,
    )


Reply = Callable[[Sequence[BaseMessage]], str]


def last_user_text(messages: Sequence[BaseMessage]) -> str:
    for message in reversed(messages):
        if message.type == "human":
            return message.text
    return ""


class FakeChatModel(BaseChatModel):
    """Answers `reply(messages)`, streamed word by word through LangChain's usual callbacks.

    Streaming goes through the same path as a real model's tokens, so what the tests see
    (deltas, then the completed answer) is what clients see with a real model.
    """

    reply: Reply

    @property
    def _llm_type(self) -> str:
        return "fake-chat-model"

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        message = AIMessage(content=self.reply(messages))
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for word in _words(self.reply(messages)):
            yield ChatGenerationChunk(message=AIMessageChunk(content=word))

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for word in _words(self.reply(messages)):
            yield ChatGenerationChunk(message=AIMessageChunk(content=word))


def _words(text: str) -> list[str]:
    """Words with their trailing spaces: the pieces join back into `text` exactly."""
    return re.findall(r"\S+\s*|\s+", text)
