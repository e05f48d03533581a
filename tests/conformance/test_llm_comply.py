"""An independent conformance tool, llm-comply, against a real `lgos serve`: every test that
applies to a text graph passes, in both formats, and docs/conformance.md shows this run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from openai import OpenAI

from tests.conformance.llm_comply import (
    MODEL,
    NOT_APPLICABLE,
    PAGE,
    Outcome,
    render,
    run_all,
    serve_demo,
)
from tests.support.processes import Process

pytestmark = [pytest.mark.processes, pytest.mark.slow, pytest.mark.timeout(600)]


@pytest.fixture(scope="module")
def server() -> Iterator[Process]:
    with serve_demo() as process:
        yield process


@pytest.fixture(scope="module")
def results(server: Process) -> dict[str, list[Outcome]]:
    return run_all(server)


def test_every_applicable_test_passes(results: dict[str, list[Outcome]]) -> None:
    failures = {
        outcome.test_id: outcome.errors
        for outcomes in results.values()
        for outcome in outcomes
        if outcome.applicable and outcome.status != "passed"
    }
    assert failures == {}
    ran = {outcome.test_id for outcomes in results.values() for outcome in outcomes}
    # A test listed as not applicable that llm-comply no longer has is a stale excuse.
    assert set(NOT_APPLICABLE) <= ran
    assert sum(outcome.applicable for outcomes in results.values() for outcome in outcomes) >= 16


def test_the_conformance_page_shows_this_run(results: dict[str, list[Outcome]]) -> None:
    assert PAGE.read_text() == render(results), "run `just conformance` and commit the page"


def test_the_strict_sdk_accepts_the_same_server(server: Process) -> None:
    client = OpenAI(
        base_url=server.base_url + "/v1", api_key="unused", _strict_response_validation=True
    )
    response = client.responses.create(model=MODEL, input="Say hello.")
    assert response.status == "completed"
    assert response.usage is not None
    with client.responses.stream(model=MODEL, input="Count from 1 to 5.") as stream:
        final = stream.get_final_response()
    assert final.usage is not None
    completion = client.chat.completions.create(
        model=MODEL, messages=[{"role": "user", "content": "Say hello."}]
    )
    assert completion.usage is not None
    assert completion.system_fingerprint
    chunks = list(
        client.chat.completions.create(
            model=MODEL,
            messages=[{"role": "user", "content": "Say one word."}],
            stream=True,
            stream_options={"include_usage": True},
        )
    )
    assert chunks[-1].usage is not None
