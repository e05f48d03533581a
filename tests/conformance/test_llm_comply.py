"""Independent conformance tools against a real `lgos serve`: every llm-comply test that
applies passes, in both formats, on the text graph and on everything-agent; CompatCanary scores
100 with required compatibility on everything-agent in both profiles; docs/conformance.md shows
this run."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from openai import OpenAI

from tests.conformance import compatcanary
from tests.conformance.compatcanary import Scan
from tests.conformance.llm_comply import (
    AGENT_MODEL,
    AGENT_NOT_APPLICABLE,
    MODEL,
    NOT_APPLICABLE,
    PAGE,
    Results,
    render,
    run_all,
    run_canary,
    serve_demo,
)
from tests.support.processes import Process

pytestmark = [pytest.mark.processes, pytest.mark.slow, pytest.mark.timeout(600, func_only=True)]


@pytest.fixture(scope="module")
def server() -> Iterator[Process]:
    with serve_demo() as process:
        yield process


@pytest.fixture(scope="module")
def results(server: Process) -> Results:
    return run_all(server)


@pytest.fixture(scope="module")
def scans(server: Process) -> list[Scan]:
    reason = compatcanary.unavailable_reason()
    if reason:
        pytest.skip(reason)
    return run_canary(server)


@pytest.mark.parametrize(
    ("model", "excused", "at_least"),
    [(MODEL, NOT_APPLICABLE, 16), (AGENT_MODEL, AGENT_NOT_APPLICABLE, 22)],
)
def test_every_applicable_test_passes(
    results: Results, model: str, excused: dict[str, str], at_least: int
) -> None:
    outcomes = [outcome for by_format in results[model].values() for outcome in by_format]
    failures = {
        outcome.test_id: outcome.errors
        for outcome in outcomes
        if outcome.applicable and outcome.status != "passed"
    }
    assert failures == {}
    # A test listed as not applicable that llm-comply no longer has is a stale excuse.
    assert set(excused) <= {outcome.test_id for outcome in outcomes}
    assert sum(outcome.applicable for outcome in outcomes) >= at_least


def test_the_agent_graph_shows_tools_images_and_reasoning(results: Results) -> None:
    passed = {
        outcome.test_id
        for by_format in results[AGENT_MODEL].values()
        for outcome in by_format
        if outcome.status == "passed"
    }
    shown = {"tool-calling", "image-input", "reasoning-summary"}
    assert shown | {f"chat-{test_id}" for test_id in shown} <= passed


def test_compatcanary_scores_100_in_both_profiles(scans: list[Scan]) -> None:
    assert [(report.profile, report.score, report.compatible) for report in scans] == [
        ("modern", 100, True),
        ("chat", 100, True),
    ]
    failed = [check.name for report in scans for check in report.checks if check.status != "pass"]
    assert failed == []


def test_the_conformance_page_shows_this_run(results: Results, scans: list[Scan]) -> None:
    assert PAGE.read_text() == render(results, scans), "run `just conformance` and commit the page"


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
