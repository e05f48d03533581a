"""llm-comply (an independent OpenAI / Open Responses conformance tool) against `lgos serve`.

Used by the test in this folder and by `just conformance`, which rewrites docs/conformance.md
from a fresh run. The tool is run as a user runs it: its own CLI, over HTTP, against a real
`lgos serve` process serving the demo registry.
"""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import dataclass
from importlib.metadata import version
from pathlib import Path
from typing import Any

from tests.support.processes import REPO, Process, clean_environment, serving

LLM_COMPLY = str(Path(sys.executable).parent / "llm-comply")
MODEL = "simple-graph"
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

    @property
    def applicable(self) -> bool:
        return self.test_id not in NOT_APPLICABLE


def run_format(base_url: str, api_format: str) -> list[Outcome]:
    command = [LLM_COMPLY, "--format", api_format, "-u", base_url + "/v1", "-k", "unused"]
    result = subprocess.run(
        [*command, "-m", MODEL, "--json", "--timeout", "60"],
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
        )
        for item in report["results"]
    ]


def serve_demo() -> Any:
    """`lgos serve` on the demo registry (default embedded resources), on a free port."""
    return serving(["demo.registry:create_registry", "--port", "0"], clean_environment())


def run_all(server: Process) -> dict[str, list[Outcome]]:
    return {api_format: run_format(server.base_url, api_format) for api_format in FORMATS}


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def render(results: dict[str, list[Outcome]]) -> str:
    lines = [
        "# Conformance",
        "",
        "LGOS is checked by an independent conformance tool,",
        f"[llm-comply](https://pypi.org/project/llm-comply/) {version('llm-comply')}, which",
        "validates an endpoint against the Open Responses schema (2026-04-24) and OpenAI's Chat",
        "Completions schema, plus semantic checks (status, usage, streaming lifecycle, sequence",
        "numbers, `[DONE]`). It runs in the test suite (`tests/conformance/`) against a real",
        f"`lgos serve` process serving the demo registry, model `{MODEL}`, in both formats.",
        "",
        "This page is the latest result. Regenerate it with:",
        "",
        "```bash",
        "just conformance",
        "```",
        "",
        "The test fails when a test that applies fails, and when this page no longer matches",
        "a fresh run. Tests that a text graph cannot show are listed with the reason; they are",
        "not counted as failures, and they are not claimed as passes either.",
        "",
    ]
    for api_format, title in FORMATS.items():
        outcomes = results[api_format]
        applicable = [outcome for outcome in outcomes if outcome.applicable]
        passed = sum(outcome.status == "passed" for outcome in applicable)
        lines += [
            f"## {title} (`--format {api_format}`)",
            "",
            f"{passed} of {len(applicable)} applicable tests pass; "
            f"{len(outcomes) - len(applicable)} do not apply to a text graph.",
            "",
            "| test | name | result | note |",
            "| --- | --- | --- | --- |",
        ]
        for outcome in outcomes:
            if not outcome.applicable:
                result, note = "not applicable", NOT_APPLICABLE[outcome.test_id]
            else:
                result = outcome.status
                note = "; ".join(outcome.errors) or ADVISORY.get(outcome.test_id, "")
            lines.append(
                f"| `{outcome.test_id}` | {_cell(outcome.name)} | {result} | {_cell(note)} |"
            )
        lines.append("")
    return "\n".join(lines)


def main() -> int:
    with serve_demo() as server:
        results = run_all(server)
    PAGE.write_text(render(results))
    failed = [
        outcome.test_id
        for outcomes in results.values()
        for outcome in outcomes
        if outcome.applicable and outcome.status != "passed"
    ]
    print(f"wrote {PAGE.relative_to(REPO)}; failing applicable tests: {failed or 'none'}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
