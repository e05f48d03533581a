"""Token usage of a graph run: the sum over every model call the graph made.

A graph may call several models (or one model several times, or inside subgraphs), and its
final message need not come from a model at all, so usage is collected from LangChain's
callbacks for the whole run rather than read off the answer.

The collector reaches the run's callbacks through a LangChain configure hook, not the run's
`callbacks`: while `collecting` holds it, LangChain adds it to each callback manager it
configures after the graph's own (every model call's included) as a local handler. Handed to
the run as an inheritable callback it was copied into every child manager and checked by
LangGraph at every step, which cost a one-node graph twice as much (docs/benchmarks.md,
2026-12-05).
"""

from __future__ import annotations

import threading
from contextvars import ContextVar
from typing import Any

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.messages import AIMessage
from langchain_core.messages.ai import UsageMetadata, add_usage
from langchain_core.outputs import ChatGeneration, LLMResult

from lgos.core.request import GraphRequest
from lgos.core.run_events import NO_USAGE, Usage
from lgos.run.langchain_internals import register_configure_reader


class UsageCollector(BaseCallbackHandler):
    """Adds up `usage_metadata` of every chat model call in one run.

    LangChain ships `UsageMetadataCallbackHandler`, but it drops calls whose message has no
    `model_name` (many providers and fake models), and keys by model; one sum is what the
    OpenAI usage object needs.
    """

    run_inline = True  # called on the event loop, not in a thread pool
    # Only model ends matter: LangChain then skips dispatching every chain, tool, retriever
    # and custom event of the run to this handler (measured: most of the collector's cost
    # per request on a one-node graph).
    ignore_chain = True
    ignore_agent = True
    ignore_retriever = True
    ignore_retry = True
    ignore_custom_event = True

    def __init__(self, request: GraphRequest | None = None) -> None:
        super().__init__()
        self._lock = threading.Lock()  # sync nodes run in threads
        self._total: UsageMetadata | None = None
        self.calls = 0
        # Set once LangChain has configured the run's first callback manager, the graph's own
        # (`_collector_for_this_manager`).
        self.past_graph_manager = False
        # The request of the run, which its nodes read (`nodes.get_request`): carried here so
        # the runner sets one context variable around each step, not two.
        self.request = request

    def on_llm_end(self, response: LLMResult, **kwargs: Any) -> None:
        for generations in response.generations:
            for generation in generations:
                if not isinstance(generation, ChatGeneration):
                    continue
                message = generation.message
                if isinstance(message, AIMessage) and message.usage_metadata:
                    with self._lock:
                        self.calls += 1
                        self._total = add_usage(self._total, message.usage_metadata)

    def usage(self, final: AIMessage | None = None) -> Usage:
        """The run's usage; a final message's own usage counts only when no call reported any
        (a node that wrote the answer with `usage_metadata` but without a model call)."""
        with self._lock:
            total = self._total
        if total is None and final is not None:
            total = final.usage_metadata
        return usage_from_metadata(total)


def usage_from_metadata(usage: UsageMetadata | None) -> Usage:
    if not usage:
        return NO_USAGE
    input_details: Any = usage.get("input_token_details") or {}
    output_details: Any = usage.get("output_token_details") or {}
    return Usage(
        input_tokens=usage.get("input_tokens", 0) or 0,
        output_tokens=usage.get("output_tokens", 0) or 0,
        cached_tokens=input_details.get("cache_read", 0) or 0,
        cache_write_tokens=input_details.get("cache_creation", 0) or 0,
        reasoning_tokens=output_details.get("reasoning", 0) or 0,
    )


# The collector of the run the runner is driving (set around each step it asks the graph for,
# so that the tasks and threads LangGraph starts for the step see it too); through it, the
# nodes of the step read the run's request.
collecting: ContextVar[UsageCollector | None] = ContextVar("lgos_usage", default=None)


def _collector_for_this_manager() -> UsageCollector | None:
    """The collector of the run being driven, for each callback manager LangChain configures in
    the run but the first.

    The first is the graph's own: LangGraph's `astream` configures it before any other of the
    run, and it dispatches only the graph's chain start and end, which the collector ignores.
    On it, the collector cost 57k CPU instructions of a 3.4M-instruction `echo` request
    (LangChain's dispatch and LangGraph's handler checks), 6k without it (docs/benchmarks.md,
    2026-12-07, fifth round). Every model call's manager is configured later, inside the
    graph's tasks. tests/internals/test_langchain.py checks both halves, so the upgrade that
    changes either fails there."""
    collector = collecting.get()
    if collector is None or collector.past_graph_manager:
        return collector
    collector.past_graph_manager = True  # on the loop's thread: no node runs yet
    return None


register_configure_reader(_collector_for_this_manager, inheritable=False)
