"""Fixtures of the two-users tests: the reference stack (users_stack.py), started once with
its own deadlines outside any test's timeout, and Debian's Chromium. A piece that does not
start fails the first test with its log and skips the others (tests/support/started.py)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Playwright, expect
from users_stack import UserStack, UserStackProcesses

from tests.support.browser import launch_chromium
from tests.support.started import StartFailure, require, start_once

# The UIs answer through two more processes than usual on a 2-core machine.
expect.set_options(timeout=60_000)


@pytest.fixture(scope="session")
def user_stack_service(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[UserStack | StartFailure]:
    processes = UserStackProcesses(tmp_path_factory.mktemp("user-stack"))
    try:
        yield start_once("the reference stack with two users per UI", processes.start)
    finally:
        processes.stop()


@pytest.fixture
def user_stack(user_stack_service: UserStack | StartFailure) -> UserStack:
    return require(user_stack_service)


@pytest.fixture(scope="session")
def users_browser(playwright: Playwright) -> Iterator[Browser]:
    browser = launch_chromium(playwright)
    yield browser
    browser.close()
