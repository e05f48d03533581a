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
from langchain_core.messages.ai import UsageMetadata
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


def word_usage(messages: Sequence[BaseMessage], answer: str) -> UsageMetadata:
    """Token usage as a real model reports it, counting words as tokens."""
    prompt = sum(len(split_tokens(message.text)) for message in messages)
    completion = len(split_tokens(answer))
    return {
        "input_tokens": prompt,
        "output_tokens": completion,
        "total_tokens": prompt + completion,
    }


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
        answer = self._answer(messages)
        message = AIMessage(content=answer, usage_metadata=word_usage(messages, answer))
        return ChatResult(generations=[ChatGeneration(message=message)])

    def _stream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        answer = self._answer(messages)
        for token in split_tokens(answer):
            yield ChatGenerationChunk(message=AIMessageChunk(content=token))
        yield self._usage_chunk(messages, answer)

    async def _astream(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: AsyncCallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> AsyncIterator[ChatGenerationChunk]:
        answer = self._answer(messages)
        for index, token in enumerate(split_tokens(answer)):
            if self.delay and index:
                await asyncio.sleep(self.delay)
            chunk = ChatGenerationChunk(message=AIMessageChunk(content=token))
            if run_manager is not None:
                await run_manager.on_llm_new_token(token, chunk=chunk)
            yield chunk
        yield self._usage_chunk(messages, answer)

    @staticmethod
    def _usage_chunk(messages: Sequence[BaseMessage], answer: str) -> ChatGenerationChunk:
        # Real providers send usage in a last, empty chunk (OpenAI's stream_options).
        usage = word_usage(messages, answer)
        return ChatGenerationChunk(message=AIMessageChunk(content="", usage_metadata=usage))
