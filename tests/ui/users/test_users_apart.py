"""Two users of each chat UI in Chromium, through the reference stack as `just demo/up` wires
it (local processes, users_stack.py): neither reaches the other's review, chat or background
run, in the UI or through the gateway with the other's ids (tests/support/two_users.py)."""

from __future__ import annotations

import pytest
from playwright.sync_api import Browser

from tests.support.two_users import (
    UserStack,
    chainlit_users_stay_apart,
    openwebui_users_stay_apart,
)

pytestmark = pytest.mark.timeout(900, func_only=True)


def test_chainlit_users_never_reach_each_others_runs(
    user_stack: UserStack, users_browser: Browser
) -> None:
    chainlit_users_stay_apart(user_stack, users_browser)


def test_openwebui_users_never_reach_each_others_runs(
    user_stack: UserStack, users_browser: Browser
) -> None:
    openwebui_users_stay_apart(user_stack, users_browser)
