"""A deterministic chat model that streams through LangChain's normal callback path.

It stands in for a real model in every demo graph unless DEMO_OPENAI_* variables configure one.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from typing import Any

from langchain_core.callbacks import AsyncCallbackManagerForLLMRun, CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import AIMessage, AIMessageChunk, BaseMessage
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult

Script = Callable[[Sequence[BaseMessage]], str]


def last_user_text(messages: Sequence[BaseMessage]) -> str:
    for message in reversed(messages):
        if message.type == "human":
            return message.text
    return ""


def split_tokens(text: str) -> list[str]:
    """Words with their trailing whitespace, so the chunks join back into `text` exactly."""
    return re.findall(r"\S+\s*|\s+", text)


class ScriptedChatModel(BaseChatModel):
    """Answers `script(messages)`, streamed word by word, `delay` seconds apart."""

    script: Script
    delay: float = 0.0

    @property
    def _llm_type(self) -> str:
        return "lgos-demo-scripted"

    def _answer(self, messages: Sequence[BaseMessage]) -> str:
        return self.script(messages)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(
            generations=[ChatGeneration(message=AIMessage(content=self._answer(messages)))]
        )

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        for token in split_tokens(self._answer(messages)):
            yield ChatGenerationChunk(message=AIMessageChunk(content=token))

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        for index, token in enumerate(split_tokens(self._answer(messages))):
            if self.delay and index:
                await asyncio.sleep(self.delay)
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=token))
            if run_manager is not None:
                await run_manager.on_llm_new_token(token, chunk=chunk)
            yield chunk
