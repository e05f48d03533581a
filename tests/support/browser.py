"""Debian's Chromium as every browser test launches it (Chainlit, Open WebUI, the docs site,
the compose stack's UIs): one executable, one set of flags, one rule for what may load.

Playwright's own browser download is never used (`playwright install` cannot run here); the
launch goes through pytest-playwright's session-wide `playwright` fixture, because a second
sync Playwright in the same session fails ("using Playwright Sync API inside the asyncio loop").
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

CHROMIUM = os.environ.get("LGOS_TEST_CHROMIUM") or os.environ.get(
    "CHROMIUM_PATH", "/usr/bin/chromium"
)
CHROMIUM_ARGS = [
    "--no-sandbox",  # the tests run as root
    "--disable-gpu",
    # Keep Chromium from calling Google's services.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
# Pages ask CDNs for fonts and styles: those requests fail at once instead of waiting.
OFF_MACHINE = re.compile(r"^https?://(?!127\.0\.0\.1|localhost)")


def launch_chromium(playwright: Any) -> Any:
    """A headless Chromium, or a skip that says how to install it."""
    if not Path(CHROMIUM).exists():
        pytest.skip(f"Chromium not found at {CHROMIUM} (apt-get install -y chromium)")
    return playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)


def loopback_context(browser: Any, **options: Any) -> Any:
    """A fresh browser context whose requests to anything but loopback are aborted."""
    context = browser.new_context(**options)
    context.route(OFF_MACHINE, lambda route: route.abort())
    return context
