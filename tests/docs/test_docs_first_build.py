"""The first `just docs` of a checkout fetches nothing: Mermaid comes with `just setup`.

The recipe runs in a copy of the docs sources (justfile, mkdocs.yml, docs/, the assets script)
with an `npm` first on PATH that writes down that it was called: a docs build that went to the
npm registry for Mermaid would call it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
VENDOR = Path("docs") / "assets" / "vendor"

pytestmark = [
    pytest.mark.slow,
    pytest.mark.timeout(600),
    pytest.mark.skipif(shutil.which("just") is None, reason="needs just"),
]


def checkout(tmp_path: Path) -> Path:
    """The docs sources as a fresh clone has them: no vendored Mermaid."""
    copy = tmp_path / "checkout"
    shutil.copytree(ROOT / "docs", copy / "docs", ignore=shutil.ignore_patterns("vendor"))
    shutil.copy(ROOT / "mkdocs.yml", copy)
    shutil.copy(ROOT / "justfile", copy)
    (copy / "scripts").mkdir()
    shutil.copy(ROOT / "scripts" / "docs-assets.sh", copy / "scripts")
    return copy


def test_the_docs_build_asks_no_registry_for_mermaid(tmp_path: Path) -> None:
    copy = checkout(tmp_path)
    calls = tmp_path / "npm-calls"
    shims = tmp_path / "bin"
    shims.mkdir()
    npm = shims / "npm"
    npm.write_text(f'#!/bin/sh\necho "$@" >> "{calls}"\nexit 1\n')
    npm.chmod(0o755)
    env = {
        **os.environ,
        "PATH": f"{shims}{os.pathsep}{os.environ['PATH']}",
        "UV_PROJECT": str(ROOT),  # `uv run mkdocs` uses the repository's environment
    }

    def docs() -> subprocess.CompletedProcess[str]:
        site = tmp_path / "site"
        return subprocess.run(
            ["just", "docs", "--quiet", "--site-dir", str(site)],
            cwd=copy,
            env=env,
            capture_output=True,
            text=True,
            timeout=300,
        )

    # Without `just setup` the build stops at once and says what to run; it does not fetch.
    before = docs()
    assert before.returncode != 0, before.stdout
    assert "run just setup" in before.stderr, before.stderr
    assert not calls.exists(), calls.read_text()

    # `just setup` is where Mermaid is fetched (pinned): with its file in place the build
    # passes, and still calls no npm.
    setup = subprocess.run(
        ["just", "--dry-run", "setup"], cwd=copy, capture_output=True, text=True, timeout=60
    )
    assert "bash scripts/setup.sh" in setup.stderr, setup.stderr
    assert "\nbash scripts/docs-assets.sh\n" in (ROOT / "scripts" / "setup.sh").read_text()
    assert (ROOT / VENDOR / "mermaid.min.js").exists(), "run just setup in this checkout first"
    shutil.copytree(ROOT / VENDOR, copy / VENDOR)
    after = docs()
    assert after.returncode == 0, after.stderr
    assert not calls.exists(), calls.read_text()
