"""llm-comply (an independent OpenAI / Open Responses conformance tool) against `lgos serve`.

Used by the test in this folder and by `just conformance`, which rewrites docs/conformance.md
from a fresh run. The tool is run as a user runs it: its own CLI, over HTTP, against a real
`lgos serve` process serving the demo registry.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from tests.conformance.compatcanary import PACKAGE, PROFILES, Scan, scan
from tests.conformance.registry import AGENT_MODEL, REASONING_ALIAS
from tests.support.processes import REPO, Process, clean_environment, serving

LLM_COMPLY = str(Path(sys.executable).parent / "llm-comply")
MODEL = "simple-graph"
# The demo registry with everything-agent also served under an id llm-comply runs its reasoning
# tests for (see tests/conformance/registry.py).
REGISTRY = "tests.conformance.registry:create_registry"
# Tests llm-comply runs only for ids named like a reasoning model: on the agent graph they run
# against REASONING_ALIAS.
REASONING_TESTS = {"open-responses": "reasoning-summary", "openai-chat": "chat-reasoning-summary"}
FORMATS = {"open-responses": "Responses API", "openai-chat": "Chat Completions"}
PAGE = REPO / "docs" / "conformance.md"
RUN_TIMEOUT = 300

# What a text graph cannot show, by test id. Every other test must pass.
NOT_APPLICABLE = {
    "tool-calling": "the graph answers in text and calls no client function; client tools "
    "reach graphs that call them through get_request().tools",
    "chat-tool-calling": "as tool-calling",
    "image-input": "the graph reads text only; LGOS answers image parts with a 400 that "
    "names the part",
    "chat-image-input": "as image-input",
    "reasoning-summary": "the graph produces no reasoning; llm-comply skips it for models "
    "not named like a reasoning model",
    "chat-reasoning-summary": "as reasoning-summary",
}
# The agent graph shows every test.
AGENT_NOT_APPLICABLE: dict[str, str] = {}
# Notes on passing tests, by test id.
ALIASED = (
    f"run against the same graph served as `{REASONING_ALIAS}`: llm-comply skips this test "
    "for model ids without o1, o3, o4, gpt-5 or deepseek-r"
)
# Passing tests whose warnings are expected, by test id.
ADVISORY = {
    "compact-response": "LGOS serves no /responses/compact; the test accepts the 404 and warns",
}


@dataclass(frozen=True, slots=True)
class Outcome:
    test_id: str
    name: str
    status: str  # passed | failed | skipped
    errors: tuple[str, ...]
    warnings: tuple[str, ...]

    model: str = MODEL

    @property
    def applicable(self) -> bool:
        return self.test_id not in not_applicable(self.model)


def not_applicable(model: str) -> dict[str, str]:
    return AGENT_NOT_APPLICABLE if model == AGENT_MODEL else NOT_APPLICABLE


def run_format(
    base_url: str, api_format: str, model: str = MODEL, only: str | None = None
) -> list[Outcome]:
    command = [LLM_COMPLY, "--format", api_format, "-u", base_url + "/v1", "-k", "unused"]
    if only is not None:
        command += ["--filter", only]
    result = subprocess.run(
        [*command, "-m", model, "--json", "--timeout", "60"],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        check=False,
    )
    try:
        report: dict[str, Any] = json.loads(result.stdout)
    except json.JSONDecodeError:
        raise AssertionError(f"llm-comply printed no report:\n{result.stderr}") from None
    return [
        Outcome(
            item["id"],
            item["name"],
            item["status"],
            tuple(item.get("errors", ())),
            tuple(item.get("warnings", ())),
            model,
        )
        for item in report["results"]
    ]


def serve_demo() -> Any:
    """`lgos serve` on the demo registry (default embedded resources), on a free port."""
    return serving([REGISTRY, "--port", "0"], clean_environment())


Results = dict[str, dict[str, list[Outcome]]]  # model → format → outcomes


def run_agent_format(base_url: str, api_format: str) -> list[Outcome]:
    """Every test on the agent graph, its reasoning test run under REASONING_ALIAS."""
    reasoning_test = REASONING_TESTS[api_format]
    aliased = {
        outcome.test_id: dataclasses.replace(outcome, model=AGENT_MODEL)
        for outcome in run_format(base_url, api_format, REASONING_ALIAS, only=reasoning_test)
    }
    return [
        aliased.get(outcome.test_id, outcome)
        for outcome in run_format(base_url, api_format, AGENT_MODEL)
    ]


def run_all(server: Process) -> Results:
    return {
        MODEL: {api_format: run_format(server.base_url, api_format) for api_format in FORMATS},
        AGENT_MODEL: {
            api_format: run_agent_format(server.base_url, api_format) for api_format in FORMATS
        },
    }


def run_canary(server: Process) -> list[Scan]:
    return [scan(server.base_url, AGENT_MODEL, profile) for profile in PROFILES]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(results: Results, scans: list[Scan]) -> str:
    lines = [
        "# Conformance",
        "",
        "LGOS is checked by two independent tools, run in the test suite",
        "(`tests/conformance/`) against a real `lgos serve` process serving the demo registry:",
        "",
        f"- [llm-comply](https://pypi.org/project/llm-comply/) {version('llm-comply')}, which",
        "  validates an endpoint against the Open Responses schema (2026-04-24) and OpenAI's Chat",
        "  Completions schema, plus semantic checks (status, usage, streaming lifecycle, sequence",
        "  numbers, `[DONE]`, tool calling, image input), in both formats, on the text graph",
        f"  `{MODEL}` and on `{AGENT_MODEL}`, the demo graph that takes everything a client",
        "  sends (see [What reaches your graph](what-reaches-your-graph.md));",
        f"- [CompatCanary](https://www.npmjs.com/package/compatcanary) {PACKAGE.split('@')[1]}"
        f" (`npx --yes {PACKAGE} scan`), on `{AGENT_MODEL}`, with both of its profiles.",
        "",
        "This page is the latest result. Regenerate it with:",
        "",
        "```bash",
        "just conformance",
        "```",
        "",
        "The tests fail when a check that applies fails, and when this page no longer matches",
        "a fresh run. Tests that a graph cannot show are listed with the reason; they are not",
        "counted as failures, and they are not claimed as passes either.",
        "",
        "llm-comply runs its reasoning tests only for a model id containing `o1`, `o3`, `o4`,",
        "`gpt-5` or `deepseek-r` (the tests' `skip_reason`, in",
        "`llm_comply/tests/open_responses.py` and `openai_chat.py`, the same in every published",
        f"version that has them, 0.4.0 to 0.5.0), so on `{AGENT_MODEL}` those two run against",
        f"the same graph served under a second id, `{REASONING_ALIAS}`",
        "(`tests/conformance/registry.py`). Its Chat test sends the",
        "Responses `reasoning` object in a Chat request, which OpenAI's Chat API does not define;",
        "LGOS takes it there as well, beside `reasoning_effort`. llm-comply's map of stream",
        "events to schemas (`SSE_EVENT_TO_SCHEMA` in `llm_comply/schema.py`) names",
        "`response.reasoning_summary.delta` and `.done`, where OpenAI and Open Responses send",
        "`response.reasoning_summary_text.delta` and `.done` (as LGOS does); none of its streamed",
        "tests asks for a summary, so no run meets those events.",
        "",
        "## CompatCanary",
        "",
    ]
    for report in scans:
        verdict = "PASS" if report.compatible else "FAIL"
        lines += [
            f"### `--profile {report.profile}` on `{AGENT_MODEL}`",
            "",
            f"Score {report.score}/100; required compatibility: {verdict}.",
            "",
            "| check | required | result | summary |",
            "| --- | --- | --- | --- |",
        ]
        for check in report.checks:
            required = "yes" if check.required else "no"
            lines.append(
                f"| {_cell(check.name)} | {required} | {check.status} | {_cell(check.summary)} |"
            )
        lines.append("")
    for model in (MODEL, AGENT_MODEL):
        lines += [f"## llm-comply on `{model}`", ""]
        for api_format, title in FORMATS.items():
            lines += _format_table(results[model][api_format], api_format, title, model)
    return "\n".join(lines) + _mcp_section()


def _mcp_section() -> str:
    """The page's MCP section, kept as it is: tests/protocols/test_mcp_conformance.py runs that
    suite and checks its table."""
    page = PAGE.read_text() if PAGE.exists() else ""
    start = page.find("\n## MCP\n")
    return page[start:] if start >= 0 else ""


def _format_table(outcomes: list[Outcome], api_format: str, title: str, model: str) -> list[str]:
    excuses = not_applicable(model)
    applicable = [outcome for outcome in outcomes if outcome.applicable]
    passed = sum(outcome.status == "passed" for outcome in applicable)
    lines = [
        f"### {title} (`--format {api_format}`)",
        "",
        f"{passed} of {len(applicable)} applicable tests pass; "
        f"{len(outcomes) - len(applicable)} do not apply to this graph.",
        "",
        "| test | name | result | note |",
        "| --- | --- | --- | --- |",
    ]
    for outcome in outcomes:
        if not outcome.applicable:
            result, note = "not applicable", excuses[outcome.test_id]
        else:
            result = outcome.status
            note = "; ".join(outcome.errors) or ADVISORY.get(outcome.test_id, "")
            if model == AGENT_MODEL and outcome.test_id in REASONING_TESTS.values():
                note = "; ".join(filter(None, (note, ALIASED)))
        lines.append(f"| `{outcome.test_id}` | {_cell(outcome.name)} | {result} | {_cell(note)} |")
    lines.append("")
    return lines


def main() -> int:
    with serve_demo() as server:
        results = run_all(server)
        scans = run_canary(server)
    PAGE.write_text(render(results, scans))
    failed = [
        f"{outcome.model}:{outcome.test_id}"
        for by_format in results.values()
        for outcomes in by_format.values()
        for outcome in outcomes
        if outcome.applicable and outcome.status != "passed"
    ]
    failed += [f"compatcanary:{report.profile}" for report in scans if report.score != 100]
    print(f"wrote {PAGE.relative_to(REPO)}; failing applicable tests: {failed or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
