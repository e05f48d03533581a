"""The documentation site reads and draws its diagrams with no internet.

Builds the site (`mkdocs build --strict`, Mermaid put in place by scripts/docs-assets.sh, which
`just setup` runs) into a temporary folder, serves it on loopback and opens the home page in
Debian's Chromium with every request that leaves the machine aborted and recorded: the flow
diagram must be drawn (Material's drawn diagram in place of its source) and the page must have
asked for nothing outside.
"""

from __future__ import annotations

import functools
import http.server
import os
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.browser import OFF_MACHINE, launch_chromium

sync_api = pytest.importorskip("playwright.sync_api")

pytestmark = [pytest.mark.slow, pytest.mark.timeout(600, func_only=True)]

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    built = tmp_path_factory.mktemp("site")
    subprocess.run(["bash", str(ROOT / "scripts" / "docs-assets.sh")], check=True, timeout=300)
    subprocess.run(
        ["mkdocs", "build", "--strict", "--quiet", "--site-dir", str(built)],
        cwd=ROOT,
        check=True,
        timeout=300,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
    )
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(built))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()


def test_home_page_draws_its_diagram_offline(site: str, playwright: object) -> None:
    """Every wait here has a deadline (the build's subprocess timeouts, the expect timeouts)."""
    outside: list[str] = []
    browser = launch_chromium(playwright)
    try:
        page = browser.new_page()

        def refuse(route: object) -> None:
            outside.append(route.request.url)  # type: ignore[attr-defined]
            route.abort()  # type: ignore[attr-defined]

        page.route(OFF_MACHINE, refuse)
        page.goto(f"{site}/", wait_until="domcontentloaded")
        # Material replaces the diagram's source (a <pre class="mermaid">) with a <div
        # class="mermaid"> that holds the drawn SVG in a closed shadow root once Mermaid ran.
        drawn = page.locator("div.mermaid").first
        sync_api.expect(drawn).to_be_visible(timeout=60_000)
        sync_api.expect(page.locator("pre.mermaid")).to_have_count(0)
        sync_api.expect(page.get_by_text("flowchart LR")).to_have_count(0)
        box = drawn.bounding_box()
        assert box is not None
        assert box["height"] > 100, box  # a drawn diagram, not an empty box
    finally:
        browser.close()
    assert outside == [], outside
