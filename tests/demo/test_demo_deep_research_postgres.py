"""deep-research on PostgreSQL: the reviewed plan survives a server restart."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from demo.corpus import default_corpus
from demo.graphs.models import API_KEY_VARIABLE, BASE_URL_VARIABLE, MODEL_VARIABLE
from tests.demo.support import demo_app, review_calls
from tests.support.postgres import create_database, drop_database
from tests.support.sdk import in_process_sdk

pytestmark = [pytest.mark.anyio, pytest.mark.postgres]

TOPIC = "What went wrong in the Candlemas storm?"


@pytest.fixture
def database(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    for variable in (MODEL_VARIABLE, API_KEY_VARIABLE, BASE_URL_VARIABLE):
        monkeypatch.delenv(variable, raising=False)
    name, uri = create_database()
    try:
        yield uri
    finally:
        drop_database(name)


async def test_the_plan_waits_in_postgres_across_a_restart(database: str) -> None:
    first = demo_app(database)
    async with first.router.lifespan_context(first), in_process_sdk(first) as client:
        pending = await client.responses.create(model="deep-research", input=TOPIC)
        (call,) = review_calls(pending)
        plan = json.loads(call.arguments)["plan"]

    # A new server process (here: a new app on the same database) takes the answer.
    second = demo_app(database)
    async with second.router.lifespan_context(second), in_process_sdk(second) as client:
        done = await client.responses.create(
            model="deep-research",
            previous_response_id=pending.id,
            input=[{"type": "function_call_output", "call_id": call.call_id, "output": "approve"}],
        )
    assert done.status == "completed"
    assert done.output_text.startswith(f"# Research report: {TOPIC}\n")
    for line in plan.splitlines():
        assert f"## {line.split('. ', 1)[1]}\n" in done.output_text
    part = done.output[-1]
    assert part.type == "message"
    annotations = part.content[0].annotations  # type: ignore[union-attr]
    urls = {a.url.partition("#")[0] for a in annotations if a.type == "url_citation"}
    assert default_corpus().documents["candlemas-incident"].url in urls
