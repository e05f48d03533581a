"""deep-research: plan → review the plan → research the corpus with tools → cited report.

Everything runs on the scripted fake model, so each assertion is exact: the plan a reviewer
sees, the tools the agent uses (as commentary), and the report with its citations.
"""

from __future__ import annotations

import json
import re
from typing import Any

import openai
import pytest
from openai import AsyncOpenAI
from openai.types.responses import Response

from demo.corpus import default_corpus, sentences
from tests.demo.support import poll, review_calls, settings

pytestmark = pytest.mark.anyio

MODEL = "deep-research"
TOPIC = "How reliable is the Port Aveline tidal kite array?"
CORPUS = default_corpus()
TEXT_BY_URL = {document.url: document.text for document in CORPUS.documents.values()}
ID_BY_URL = {document.url: document.id for document in CORPUS.documents.values()}


def answer(call_id: str, output: str) -> list[Any]:
    return [{"type": "function_call_output", "call_id": call_id, "output": output}]


def report_part(response: Response) -> Any:
    (message,) = [item for item in response.output if item.type == "message"]
    (part,) = message.content
    assert part.type == "output_text"
    return part


def assert_citations_are_grounded(response: Response) -> list[str]:
    """Every citation points at a corpus URL and spans a sentence of that document, right
    before its [n] marker; the numbered source list names the same URL. Returns cited ids."""
    part = report_part(response)
    text = part.text
    assert part.annotations, "the report carries no citations"
    cited: list[str] = []
    for annotation in part.annotations:
        assert annotation.type == "url_citation"
        # The document's page, at the passage the claim quotes.
        url, _, passage = annotation.url.partition("#passage-")
        assert url in TEXT_BY_URL
        claim = text[annotation.start_index : annotation.end_index]
        assert claim
        assert claim in TEXT_BY_URL[url]
        assert sentences(TEXT_BY_URL[url])[int(passage)] == claim
        marker = re.match(r" \[(\d+)\]", text[annotation.end_index :])
        assert marker is not None, text[annotation.end_index : annotation.end_index + 10]
        assert f"{marker.group(1)}. [{annotation.title}]({url})" in text
        cited.append(ID_BY_URL[url])
    return cited


async def test_background_research_with_review_ends_in_a_cited_report(
    client: AsyncOpenAI,
) -> None:
    # R1: plan in the background; it completes with the review question.
    pending = await poll(
        client, await client.responses.create(model=MODEL, input=TOPIC, background=True)
    )
    assert pending.status == "completed"
    assert pending.output_text == ""  # planning is private: no text reaches the client
    (call,) = review_calls(pending)
    review = json.loads(call.arguments)
    assert review["question"].startswith(f"Approve this research plan for '{TOPIC}'?")
    assert review["choices"] == ["approve", "reject"]
    assert review["allow_other"] is True
    plan = review["plan"].splitlines()
    assert len(plan) == 3  # depth "standard"
    assert plan[0] == f"1. Background for '{TOPIC}': what is it and how does it work?"

    # R2: approve in the background; research and the report follow.
    finished = await poll(
        client,
        await client.responses.create(
            model=MODEL,
            previous_response_id=pending.id,
            input=answer(call.call_id, "approve"),
            background=True,
        ),
    )
    assert finished.status == "completed", finished.error
    assert review_calls(finished) == []
    report = finished.output_text
    assert report.startswith(f"# Research report: {TOPIC}\n")
    for question in plan:
        assert f"## {question.split('. ', 1)[1]}\n" in report
    assert "\n## Sources\n" in report
    cited = assert_citations_are_grounded(finished)
    # Four sources by default, each read and each cited; the storm incident answers "risks".
    assert len(set(cited)) == 4
    assert "candlemas-incident" in cited
    assert "Availability, the share of time kites were ready to fly, reached 93 percent" in report


async def test_only_the_report_streams_and_tools_show_as_progress(client: AsyncOpenAI) -> None:
    stream = await client.responses.create(
        model=MODEL, input=TOPIC, stream=True, metadata=settings(depth="quick", max_sources=2)
    )
    first: Response | None = None
    first_deltas: list[str] = []
    commentary_ids: set[str] = set()
    async for event in stream:
        if event.type == "response.output_item.added" and event.item.type == "message":
            if event.item.phase == "commentary":
                commentary_ids.add(event.item.id)
        elif event.type == "response.output_text.delta" and event.item_id not in commentary_ids:
            first_deltas.append(event.delta)
        elif event.type == "response.completed":
            first = event.response
    assert first is not None
    assert first_deltas == []
    (call,) = review_calls(first)

    stream = await client.responses.create(
        model=MODEL,
        previous_response_id=first.id,
        input=answer(call.call_id, "approve"),
        stream=True,
        metadata=settings(depth="quick", max_sources=2),
    )
    progress: list[str] = []
    deltas: list[str] = []
    commentary_ids = set()
    final: Response | None = None
    async for event in stream:
        if event.type == "response.output_item.added" and event.item.type == "message":
            if event.item.phase == "commentary":
                commentary_ids.add(event.item.id)
        elif event.type == "response.output_item.done" and event.item.type == "message":
            if event.item.phase == "commentary":
                progress += [p.text for p in event.item.content if p.type == "output_text"]
        elif event.type == "response.output_text.delta" and event.item_id not in commentary_ids:
            deltas.append(event.delta)
        elif event.type == "response.completed":
            final = event.response
    assert final is not None
    answer_part = next(
        item for item in final.output if item.type == "message" and item.phase != "commentary"
    ).content[0]
    assert answer_part.type == "output_text"
    # The streamed text is the answer, word by word, with nothing from planning or tools.
    assert "".join(deltas) == answer_part.text
    assert len(deltas) > 50
    assert answer_part.text.startswith("# Research report:")
    assert progress[0] == "Researching 2 questions"
    assert progress[-1] == "Writing the report from 2 sources"
    assert sum(line.startswith("Searching the corpus: ") for line in progress) == 2
    assert sum(line.startswith("Reading: ") for line in progress) == 2
    assert len(answer_part.annotations) == 2
    urls = {a.url.partition("#")[0] for a in answer_part.annotations if a.type == "url_citation"}
    assert len(urls) == 2
    assert urls <= set(TEXT_BY_URL)


async def test_a_one_line_edit_adds_a_question_and_asks_again(client: AsyncOpenAI) -> None:
    pending = await client.responses.create(model=MODEL, input=TOPIC)
    (call,) = review_calls(pending)
    revised = await client.responses.create(
        model=MODEL,
        previous_response_id=pending.id,
        input=answer(call.call_id, "What do the permits require?"),
    )
    (again,) = review_calls(revised)
    assert again.call_id != call.call_id
    plan = json.loads(again.arguments)["plan"].splitlines()
    assert len(plan) == 4
    assert plan[-1] == "4. What do the permits require?"

    done = await client.responses.create(
        model=MODEL, previous_response_id=revised.id, input=answer(again.call_id, "approve")
    )
    assert "## What do the permits require?\n" in done.output_text
    assert "permit-register" in assert_citations_are_grounded(done)


async def test_several_lines_replace_the_plan(client: AsyncOpenAI) -> None:
    pending = await client.responses.create(model=MODEL, input=TOPIC)
    (call,) = review_calls(pending)
    edited = "1. Who pays for the kites?\n2. What happened in the Candlemas storm?"
    revised = await client.responses.create(
        model=MODEL, previous_response_id=pending.id, input=answer(call.call_id, edited)
    )
    (again,) = review_calls(revised)
    assert json.loads(again.arguments)["plan"] == edited


async def test_rejecting_the_plan_stops_before_any_research(client: AsyncOpenAI) -> None:
    pending = await client.responses.create(model=MODEL, input=TOPIC)
    (call,) = review_calls(pending)
    done = await client.responses.create(
        model=MODEL, previous_response_id=pending.id, input=answer(call.call_id, "Reject")
    )
    assert done.output_text == (
        f"Research on '{TOPIC}' stopped: the plan was rejected at review, "
        "so no sources were consulted."
    )
    assert report_part(done).annotations == []


async def test_settings_bound_the_sources(client: AsyncOpenAI) -> None:
    one_source = settings(max_sources=1, depth="thorough")
    pending = await client.responses.create(model=MODEL, input=TOPIC, metadata=one_source)
    (call,) = review_calls(pending)
    assert len(json.loads(call.arguments)["plan"].splitlines()) == 5
    done = await client.responses.create(
        model=MODEL,
        previous_response_id=pending.id,
        input=answer(call.call_id, "approve"),
        metadata=one_source,
    )
    assert len(set(assert_citations_are_grounded(done))) == 1

    with pytest.raises(openai.BadRequestError) as caught:
        await client.responses.create(model=MODEL, input=TOPIC, metadata=settings(max_sources=11))
    assert caught.value.body["param"] == "metadata.lgos_settings"  # type: ignore[index]


async def test_the_model_card_advertises_review_background_and_settings(
    client: AsyncOpenAI,
) -> None:
    http = client._client  # the SDK has no typed view of the `lgos` extension
    card = (await http.get("http://test/v1/models/deep-research")).json()
    assert card["lgos"]["features"] == ["background", "interrupts"]
    assert card["lgos"]["server_tools"] == ["read_document", "search_corpus"]
    assert card["lgos"]["client_settings"]["defaults"] == {"max_sources": 4, "depth": "standard"}
