"""The MCP conformance suite (npm `@modelcontextprotocol/conformance`, pinned) against a real
`lgos serve`, its server scenarios against graphs named after the suite's fixture tools.

The scenarios LGOS does not take part in are listed with the reason: LGOS serves graphs as
tools with text answers, so resources, prompts, completions, the deprecated logging feature,
sampling and non-text content have no counterpart; docs/conformance.md has the table.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from tests.support.processes import REPO, clean_environment, serving

pytestmark = [pytest.mark.processes, pytest.mark.slow, pytest.mark.timeout(900, func_only=True)]

# 0.1.13 is the newest release that runs on Node 20 (0.1.14 on need Node 22's fs.globSync).
SUITE = "@modelcontextprotocol/conformance@0.1.13"
REGISTRY = "tests.protocols.conformance_registry:create_registry"
PASSING = {
    "server-initialize",
    "ping",
    "tools-list",
    "tools-call-simple-text",
    "tools-call-error",
    "tools-call-with-progress",
    "elicitation-sep1034-defaults",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
}
NOT_APPLICABLE = {
    "logging-set-level": "logging (deprecated in 2026-07-28): LGOS logs to its own stdout",
    "completion-complete": "no prompts or resource templates to complete",
    "tools-call-image": "graphs answer text",
    "tools-call-audio": "graphs answer text",
    "tools-call-embedded-resource": "graphs answer text",
    "tools-call-mixed-content": "graphs answer text",
    "tools-call-with-logging": "logging (deprecated in 2026-07-28)",
    "tools-call-sampling": "graphs call their own models, never the client's",
    "tools-call-elicitation": "calls the tool with a `message` argument; LGOS tools take `input`",
    "elicitation-sep1330-enums": "multi-select and titled enums: no LGOS question offers them",
    "resources-list": "no resources",
    "resources-read-text": "no resources",
    "resources-read-binary": "no resources",
    "resources-templates-read": "no resources",
    "resources-subscribe": "no resources",
    "resources-unsubscribe": "no resources",
    "prompts-list": "no prompts",
    "prompts-get-simple": "no prompts",
    "prompts-get-with-args": "no prompts",
    "prompts-get-embedded-resource": "no prompts",
    "prompts-get-with-image": "no prompts",
}
_SUMMARY = re.compile(r"^[✓✗] (\S+): (\d+) passed, (\d+) failed$", re.MULTILINE)


def test_the_server_scenarios_pass(tmp_path: Path) -> None:
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("npx (Node.js) is not installed")
    env = clean_environment(LGOS_BACKGROUND="memory")
    with serving([REGISTRY, "--port", "0"], env) as server:
        run = subprocess.run(
            [npx, "--yes", SUITE, "server", "--url", server.base_url + "/mcp"],
            capture_output=True,
            text=True,
            timeout=600,
            cwd=tmp_path,
            check=False,
        )
    results = {name: (int(ok), int(bad)) for name, ok, bad in _SUMMARY.findall(run.stdout)}
    assert set(results) == PASSING | set(NOT_APPLICABLE), run.stdout[-3000:] + run.stderr[-2000:]
    failed = {name for name, (_, bad) in results.items() if bad}
    assert failed == set(NOT_APPLICABLE), run.stdout[-6000:]
    assert all(results[name][0] > 0 for name in PASSING)
    assert not (REPO / "node_modules").exists()


def test_the_conformance_page_shows_these_results() -> None:
    page = (REPO / "docs" / "conformance.md").read_text().split("## MCP", 1)[1]
    rows = dict(re.findall(r"^\| `([a-z0-9-]+)` \| (passed|not applicable) \|", page, re.M))
    assert {name for name, result in rows.items() if result == "passed"} == PASSING
    assert {name for name, result in rows.items() if result == "not applicable"} == set(
        NOT_APPLICABLE
    )
