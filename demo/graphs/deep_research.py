"""deep-research: plan → review the plan → research the corpus with tools → cited report.

A small real agent that combines background execution with reviewed work. The model drafts
research questions; a person approves, rejects or edits them (an interrupt); the model then
searches and reads the shipped corpus through tool calls; finally it writes a report whose
`[n]` markers become `citation` annotations on the final message (`url_citation` on the wire).

Only the report streams. Planning, plan revision and tool selection are private model calls,
tagged `nostream`, so a streaming client sees exactly the text of the final answer.

Without `DEMO_OPENAI_*` settings the model is a deterministic script (see `ScriptedResearcher`),
so the graph runs offline and its tests are exact.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.outputs import ChatGeneration, ChatResult
from langchain_core.runnables import Runnable, RunnableConfig
from langchain_core.tools import BaseTool, tool
from langgraph.constants import TAG_NOSTREAM
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.message import add_messages
from langgraph.pregel import Pregel
from langgraph.types import interrupt
from pydantic import Field

from demo.corpus import Corpus, Document, default_corpus, sentences, terms
from demo.graphs.fake_model import ScriptedChatModel, last_user_text
from demo.graphs.models import configured_real_model
from lgos import ClientSettings, InvalidAnswerError, get_request, status_event

SEARCH_TOOL = "search_corpus"
READ_TOOL = "read_document"
TOOL_NAMES = frozenset({SEARCH_TOOL, READ_TOOL})

# Private model calls: LangGraph's `messages` stream skips runs carrying this tag.
PRIVATE: RunnableConfig = {"tags": [TAG_NOSTREAM]}

MAX_PLAN_QUESTIONS = 8
SEARCH_LIMIT = 5


class ResearchSettings(ClientSettings):
    max_sources: int = Field(
        default=4, ge=1, le=10, description="How many documents the report may read and cite."
    )
    depth: Literal["quick", "standard", "thorough"] = Field(
        default="standard", description="How many research questions the plan has (2, 3 or 5)."
    )


QUESTIONS_PER_DEPTH = {"quick": 2, "standard": 3, "thorough": 5}


def _settings() -> ResearchSettings:
    settings = get_request().settings
    return settings if isinstance(settings, ResearchSettings) else ResearchSettings()


class ResearchState(MessagesState):
    topic: str
    plan: list[str]
    decision: str
    feedback: str
    # The tool-calling conversation is kept apart from `messages`, whose last message is the
    # answer the client receives.
    research: Annotated[list[AnyMessage], add_messages]


# --- plans -----------------------------------------------------------------------------------

_BULLET = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s*")


def parse_plan(text: str) -> list[str]:
    """One question per line; list markers and duplicates dropped."""
    questions: list[str] = []
    for line in text.splitlines():
        question = _BULLET.sub("", line).strip()
        if question and question not in questions:
            questions.append(question)
    return questions[:MAX_PLAN_QUESTIONS]


def plan_markdown(plan: Sequence[str]) -> str:
    return "\n".join(f"{index}. {question}" for index, question in enumerate(plan, start=1))


_FAKE_QUESTIONS = (
    "Background for '{topic}': what is it and how does it work?",
    "Evidence for '{topic}': what output, availability and other figures are reported?",
    "Risks for '{topic}': which failures, incidents or open problems are recorded?",
    "Money for '{topic}': what does it cost and who pays?",
    "Outlook for '{topic}': what is planned next?",
)


def fake_plan(topic: str, count: int) -> list[str]:
    return [template.format(topic=topic) for template in _FAKE_QUESTIONS[:count]]


def fake_revision(plan: Sequence[str], edits: str) -> list[str]:
    """Several lines replace the plan; a single line is one more question."""
    lines = parse_plan(edits)
    if len(lines) > 1:
        return lines
    return [*plan, *lines][:MAX_PLAN_QUESTIONS]


def _catalog(corpus: Corpus) -> str:
    return "\n".join(f"- {document.title}" for document in corpus.documents.values())


# --- tools -----------------------------------------------------------------------------------


def corpus_tools(corpus: Corpus) -> list[BaseTool]:
    """`search_corpus` and `read_document` over `corpus`."""

    @tool(SEARCH_TOOL)
    def search_corpus(query: str) -> str:
        """Search the document collection by keywords.

        Returns up to five matches as a JSON list of objects with doc_id, title, url, score and
        the best matching sentence (snippet). Use a doc_id with read_document to read it.
        """
        return json.dumps([hit.as_json() for hit in corpus.search(query, limit=SEARCH_LIMIT)])

    @tool(READ_TOOL)
    def read_document(doc_id: str) -> str:
        """Read one document of the collection in full, by a doc_id that search_corpus returned."""
        document = corpus.get(doc_id)
        if document is None:
            return f"No document has the id {doc_id!r}; use a doc_id from search_corpus."
        return f"Title: {document.title}\nURL: {document.url}\n\n{document.text}"

    return [search_corpus, read_document]


# --- the scripted researcher -----------------------------------------------------------------


def source_quotas(max_sources: int, questions: int) -> list[int]:
    """Spread the reading budget over the questions, earlier questions first."""
    base, extra = divmod(max_sources, max(questions, 1))
    return [base + (1 if index < extra else 0) for index in range(questions)]


class ScriptedResearcher(BaseChatModel):
    """A deterministic tool-calling model: searches each question, then reads the best hits.

    It decides from the conversation alone, like a real model: which questions it has searched,
    what those searches returned, and which documents it has read.
    """

    plan: list[str]
    max_sources: int

    @property
    def _llm_type(self) -> str:
        return "lgos-demo-scripted-researcher"

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> Runnable[Any, AIMessage]:
        names = {getattr(item, "name", None) for item in tools}
        if not names >= TOOL_NAMES:
            raise ValueError(f"the scripted researcher needs the tools {sorted(TOOL_NAMES)}")
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        return ChatResult(generations=[ChatGeneration(message=self.next_step(messages))])

    def next_step(self, messages: Sequence[BaseMessage]) -> AIMessage:
        results = {m.tool_call_id: m for m in messages if isinstance(m, ToolMessage)}
        calls = [call for m in messages if isinstance(m, AIMessage) for call in m.tool_calls]
        searches = {
            call["args"].get("query"): results.get(call["id"] or "")
            for call in calls
            if call["name"] == SEARCH_TOOL
        }
        read = [call["args"].get("doc_id") for call in calls if call["name"] == READ_TOOL]
        allowed = 0
        for question, quota in zip(
            self.plan, source_quotas(self.max_sources, len(self.plan)), strict=True
        ):
            if question not in searches:
                return self._call(len(calls), SEARCH_TOOL, {"query": question})
            allowed += quota
            hits = _hits(searches[question])
            unread = [hit for hit in hits if hit not in read]
            if unread and len(read) < allowed:
                return self._call(len(calls), READ_TOOL, {"doc_id": unread[0]})
        return AIMessage(
            content=f"Searched {len(searches)} questions and read {len(read)} documents."
        )

    @staticmethod
    def _call(index: int, name: str, args: dict[str, str]) -> AIMessage:
        call_id = f"call_research_{index + 1}"
        return AIMessage(content="", tool_calls=[{"id": call_id, "name": name, "args": args}])


def _hits(result: ToolMessage | None) -> list[str]:
    if result is None:
        return []
    try:
        parsed = json.loads(result.text)
    except ValueError:
        return []
    return [hit["doc_id"] for hit in parsed if isinstance(hit, dict) and "doc_id" in hit]


# --- sources and the report ------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Source:
    number: int
    document: Document


def collect_sources(
    research: Sequence[BaseMessage], plan: Sequence[str], corpus: Corpus, max_sources: int
) -> list[Source]:
    """The documents the agent read, in reading order; search hits if it read none."""
    calls = [call for m in research if isinstance(m, AIMessage) for call in m.tool_calls]
    answered = {m.tool_call_id for m in research if isinstance(m, ToolMessage)}
    chosen: list[str] = []
    for call in calls:
        if call["name"] == READ_TOOL and call["id"] in answered:
            document = corpus.get(str(call["args"].get("doc_id", "")))
            if document is not None and document.id not in chosen:
                chosen.append(document.id)
    if not chosen:
        # A model that answered without reading still gets a grounded, cited report.
        for question in plan:
            chosen.extend(hit.document.id for hit in corpus.search(question, limit=2))
        chosen = list(dict.fromkeys(chosen))
    return [
        Source(number, corpus.documents[doc_id])
        for number, doc_id in enumerate(chosen[:max_sources], start=1)
    ]


def fake_report(topic: str, plan: Sequence[str], sources: Sequence[Source]) -> str:
    """Answer each question with the source sentence that matches it best, cited as [n]."""
    quotes = [(source, text) for source in sources for text in sentences(source.document.text)]
    used: set[str] = set()
    cited: set[int] = set()
    lines = [
        f"# Research report: {topic}",
        "",
        f"This report answers {len(plan)} research questions from {len(sources)} sources.",
    ]
    topic_terms = set(terms(topic))
    for question in plan:
        # What the question adds to the topic ("risks", "cost") decides first: every sentence
        # of every source matches the topic itself.
        facet = set(terms(question)) - topic_terms
        candidates = [(s, text) for s, text in quotes if text not in used]
        if not candidates:
            break
        # Then the topic, then a source not cited yet, then reading order.
        source, sentence = max(
            candidates,
            key=lambda pair: (
                len(facet & set(terms(f"{pair[0].document.title} {pair[1]}"))),
                len(topic_terms & set(terms(pair[1]))),
                pair[0].number not in cited,
                -pair[0].number,
            ),
        )
        used.add(sentence)
        cited.add(source.number)
        lines += ["", f"## {question}", "", f"{sentence} [{source.number}]"]
    uncited = [source for source in sources if source.number not in cited]
    if uncited:
        lines += ["", "## Other findings", ""]
        for source in uncited:
            lines.append(f"- {_best_unused(source, topic_terms, used)} [{source.number}]")
    return "\n".join(lines) + "\n"


def _best_unused(source: Source, wanted: set[str], used: set[str]) -> str:
    options = [s for s in sentences(source.document.text) if s not in used] or [
        source.document.title
    ]
    return max(options, key=lambda sentence: len(wanted & set(terms(sentence))))


def sources_markdown(sources: Sequence[Source]) -> str:
    rows = [f"{s.number}. [{s.document.title}]({s.document.url})" for s in sources]
    return "## Sources\n\n" + "\n".join(rows) + "\n"


_MARKER = re.compile(r"\[(\d{1,2})\]")
_CLAIM_BREAKS = (". ", "! ", "? ", "\n", "] ")
_CLAIM_LEAD = re.compile(r"[\s\-*]*(?:\d+\.\s+)?")


def citation_annotations(text: str, sources: Sequence[Source]) -> list[dict[str, Any]]:
    """A `citation` per `[n]` marker, spanning the claim the marker follows.

    The span starts after the previous sentence (or marker) and ends before the marker, so
    `text[start:end]` is the cited claim itself.
    """
    by_number = {source.number: source for source in sources}
    annotations: list[dict[str, Any]] = []
    for match in _MARKER.finditer(text):
        source = by_number.get(int(match.group(1)))
        if source is None:
            continue
        end = _claim_end(text, match.start())
        if end == 0 or text[end - 1] == "\n":
            continue  # a marker with no claim before it, e.g. a numbered list of sources
        start = _claim_start(text, end)
        claim = text[start:end]
        if not any(char.isalnum() for char in claim) or _MARKER.search(claim):
            continue
        annotations.append(
            {
                "type": "citation",
                # Opens the document at the sentence the claim quotes (or is most like).
                "url": source.document.passage_url(claim),
                "title": source.document.title,
                "start_index": start,
                "end_index": end,
                "cited_text": text[start:end],
            }
        )
    return annotations


def _claim_end(text: str, marker_start: int) -> int:
    end = marker_start
    while True:
        while end > 0 and text[end - 1] in " \t,":
            end -= 1
        previous = re.search(r"\[\d{1,2}\]$", text[max(0, end - 4) : end])
        if previous is None:
            return end
        end -= len(previous.group(0))  # adjacent markers ("[1][2]") cite the same claim


def _claim_start(text: str, end: int) -> int:
    # Search before the claim's own last character, which may be its full stop.
    start = max((text.rfind(sep, 0, end - 1) + len(sep) for sep in _CLAIM_BREAKS), default=0)
    start = max(start, 0)
    lead = _CLAIM_LEAD.match(text, start, end)
    return lead.end() if lead else start


def report_message(body: str, sources: Sequence[Source], usage: Any = None) -> AIMessage:
    """The final answer: the streamed body, then the list of sources, with citations."""
    separator = "" if body.endswith("\n\n") else "\n" if body.endswith("\n") else "\n\n"
    text = body + separator + sources_markdown(sources)
    block = {"type": "text", "text": text, "annotations": citation_annotations(body, sources)}
    return AIMessage(content=[block], usage_metadata=usage)


# --- prompts for a real model ----------------------------------------------------------------

PLANNER_PROMPT = """You plan research over a small collection of documents with these titles:
{catalog}

Write exactly {count} short research questions that together answer the user's request.
Reply with one question per line and nothing else."""

REVISER_PROMPT = """You maintain a research plan. Apply the reviewer's edit to the plan below:
a single instruction changes the plan as asked; a full list replaces it.
Reply with the revised plan, one question per line and nothing else.

Plan:
{plan}"""

RESEARCHER_PROMPT = """You research the plan below in a document collection, using tools.
Search for every question with search_corpus, then read the most relevant documents with
read_document; read at most {max_sources} documents in total. When you have read enough, reply
with a one-line summary and no tool call.

Plan:
{plan}"""

WRITER_PROMPT = """Write a concise research report in Markdown that answers each question of
the plan under its own '## ' heading, using only the numbered sources below. Put the source
number in square brackets right after every sentence that uses it, like this: [1]. Do not
list the sources at the end; that list is added for you.

Plan:
{plan}

Sources:
{sources}"""


def _source_text(sources: Sequence[Source]) -> str:
    return "\n\n".join(
        f"[{s.number}] {s.document.title} ({s.document.url})\n{s.document.text}" for s in sources
    )


# --- the graph -------------------------------------------------------------------------------


def deep_research_graph(
    checkpointer: Any,
    *,
    real_model: BaseChatModel | None = None,
    corpus: Corpus | None = None,
) -> Pregel[Any, Any, Any, Any]:
    """plan → review_plan → (research ⇄ tools → write_report) | revise_plan | rejected.

    `real_model` defaults to the one `DEMO_OPENAI_*` configures, or the scripted fakes.
    """
    model = real_model if real_model is not None else configured_real_model()
    documents = corpus or default_corpus()
    tools = corpus_tools(documents)
    tools_by_name = {item.name: item for item in tools}

    def scripted(script: Callable[[], str]) -> BaseChatModel:
        return ScriptedChatModel(script=lambda _messages: script())

    async def plan(state: ResearchState) -> dict[str, Any]:
        status_event("Drafting research questions")
        topic = last_user_text(state["messages"]).strip() or "the Port Aveline tidal kite array"
        count = QUESTIONS_PER_DEPTH[_settings().depth]
        planner = model or scripted(lambda: "\n".join(fake_plan(topic, count)))
        prompt = PLANNER_PROMPT.format(catalog=_catalog(documents), count=count)
        reply = await planner.ainvoke([SystemMessage(prompt), HumanMessage(topic)], PRIVATE)
        questions = parse_plan(reply.text)[:count] or fake_plan(topic, count)
        return {"topic": topic, "plan": questions, "decision": "", "feedback": ""}

    async def review_plan(state: ResearchState) -> dict[str, Any]:
        # Nothing before interrupt(): this node restarts from its top when the answer arrives.
        answer = interrupt(
            {
                "question": (
                    f"Approve this research plan for '{_clip(state['topic'])}'? Answer approve, "
                    "reject, or your edits: one line adds a question, several lines replace "
                    "the plan."
                ),
                "choices": ["approve", "reject"],
                "allow_other": True,
                "plan": plan_markdown(state["plan"]),
            }
        )
        text = str(answer).strip()
        if not text:
            # Refused, and asked again: the plan stays up for review under the same call id.
            raise InvalidAnswerError("Answer 'approve', 'reject' or your edits to the plan.")
        if text.lower() in {"approve", "reject"}:
            return {"decision": text.lower(), "feedback": ""}
        return {"decision": "edit", "feedback": text}

    def after_review(state: ResearchState) -> str:
        return {"approve": "research", "reject": "rejected"}.get(state["decision"], "revise_plan")

    async def revise_plan(state: ResearchState) -> dict[str, Any]:
        status_event("Revising the plan")
        current, edits = state["plan"], state["feedback"]
        reviser = model or scripted(lambda: "\n".join(fake_revision(current, edits)))
        prompt = REVISER_PROMPT.format(plan=plan_markdown(current))
        reply = await reviser.ainvoke([SystemMessage(prompt), HumanMessage(edits)], PRIVATE)
        return {"plan": parse_plan(reply.text) or current, "decision": "", "feedback": ""}

    async def rejected(state: ResearchState) -> dict[str, Any]:
        text = (
            f"Research on '{state['topic']}' stopped: the plan was rejected at review, "
            "so no sources were consulted."
        )
        return {"messages": [AIMessage(content=text)]}

    async def research(state: ResearchState) -> dict[str, Any]:
        max_sources = _settings().max_sources
        if not state.get("research"):
            status_event(f"Researching {len(state['plan'])} questions")
        base = model or ScriptedResearcher(plan=state["plan"], max_sources=max_sources)
        researcher = base.bind_tools(tools)
        prompt = RESEARCHER_PROMPT.format(
            max_sources=max_sources, plan=plan_markdown(state["plan"])
        )
        conversation = [SystemMessage(prompt), HumanMessage(state["topic"]), *state["research"]]
        reply = await researcher.ainvoke(conversation, PRIVATE)
        return {"research": [reply]}

    def after_research(state: ResearchState) -> str:
        last = state["research"][-1]
        rounds = sum(isinstance(m, AIMessage) for m in state["research"])
        # A budget on rounds keeps a real model that never stops calling tools from looping.
        budget = 2 * len(state["plan"]) + _settings().max_sources + 2
        if isinstance(last, AIMessage) and last.tool_calls and rounds < budget:
            return "tools"
        return "write_report"

    async def run_tools(state: ResearchState) -> dict[str, Any]:
        last = state["research"][-1]
        assert isinstance(last, AIMessage)
        results: list[ToolMessage] = []
        for call in last.tool_calls:
            call_id = call["id"] or call["name"]
            selected = tools_by_name.get(call["name"])
            if selected is None:
                content = f"Unknown tool {call['name']!r}; use {sorted(TOOL_NAMES)}."
                results.append(ToolMessage(content, tool_call_id=call_id, status="error"))
                continue
            status_event(_tool_status(call["name"], call["args"], documents))
            try:
                content = str(await selected.ainvoke(call["args"]))
            except Exception as error:  # a bad argument is the model's to fix, not a crash
                content = f"The tool failed: {error}"
                results.append(ToolMessage(content, tool_call_id=call_id, status="error"))
                continue
            results.append(ToolMessage(content, tool_call_id=call_id, name=call["name"]))
        return {"research": results}

    async def write_report(state: ResearchState) -> dict[str, Any]:
        settings = _settings()
        sources = collect_sources(state["research"], state["plan"], documents, settings.max_sources)
        status_event(f"Writing the report from {len(sources)} sources")
        topic, questions = state["topic"], state["plan"]
        writer = model or scripted(lambda: fake_report(topic, questions, sources))
        prompt = WRITER_PROMPT.format(plan=plan_markdown(questions), sources=_source_text(sources))
        # Not private: this is the answer, and it streams.
        reply = await writer.ainvoke([SystemMessage(prompt), HumanMessage(topic)])
        return {"messages": [report_message(reply.text, sources, reply.usage_metadata)]}

    builder = StateGraph(ResearchState)
    builder.add_node("plan", plan)
    builder.add_node("review_plan", review_plan)
    builder.add_node("revise_plan", revise_plan)
    builder.add_node("rejected", rejected)
    builder.add_node("research", research)
    builder.add_node("tools", run_tools)
    builder.add_node("write_report", write_report)
    builder.add_edge(START, "plan")
    builder.add_edge("plan", "review_plan")
    builder.add_conditional_edges(
        "review_plan", after_review, ["research", "revise_plan", "rejected"]
    )
    builder.add_edge("revise_plan", "review_plan")
    builder.add_edge("rejected", END)
    builder.add_conditional_edges("research", after_research, ["tools", "write_report"])
    builder.add_edge("tools", "research")
    builder.add_edge("write_report", END)
    return builder.compile(checkpointer=checkpointer)


def _clip(text: str, limit: int = 120) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _tool_status(name: str, args: dict[str, Any], corpus: Corpus) -> str:
    if name == SEARCH_TOOL:
        return f"Searching the corpus: {_clip(str(args.get('query', '')), 80)}"
    document = corpus.get(str(args.get("doc_id", "")))
    return f"Reading: {document.title if document else args.get('doc_id')}"
