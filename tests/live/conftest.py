"""Targets for the live suites: given by URL, or started here as local processes.

Environment:
  DEMO_API_URL        LGOS API base URL (…/v1) for test_direct; unset: started here
  DEMO_GATEWAY_URL    LiteLLM base URL (…/v1); unset: started here in front of the API
  DEMO_API_KEY        key for DEMO_GATEWAY_URL (default: the dev key of demo/litellm)
  DEMO_BIFROST_URL    Bifrost base URL (…/v1); unset: the Bifrost suite is skipped
  DEMO_BIFROST_PROVIDER / DEMO_BIFROST_API_KEY   Bifrost custom provider name / key
  DEMO_STACK_BACKGROUND   engine of a locally started API: hatchet (default; dbos where Go
                          is absent, so the engine cannot be built), dbos or memory
  DEMO_POSTGRES_ADMIN_URI database server for the fresh per-run database
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import hatchet
from tests.support.stack_auth import GATEWAY_LGOS_KEY

from .stack import LITELLM_DEV_KEY, LocalStack
from .targets import Target, bifrost_styles, direct_styles, litellm_styles


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line("markers", "live: talks to a running demo stack over HTTP")


def default_background() -> str:
    """The demo stack's engine, Hatchet, wherever it can be built."""
    return "dbos" if hatchet.unavailable_reason() else "hatchet"


class StackManager:
    """Starts the local stack piece by piece, only for what the session needs."""

    def __init__(self, workdir: Path) -> None:
        self.stack = LocalStack(
            workdir=workdir,
            background=(os.environ.get("DEMO_STACK_BACKGROUND") or default_background()),
            admin_uri=os.environ.get(
                "DEMO_POSTGRES_ADMIN_URI", "postgresql://postgres@127.0.0.1:5432/postgres"
            ),
        )

    def api_url(self) -> str:
        if given := os.environ.get("DEMO_API_URL"):
            return given.rstrip("/")
        if not self.stack.api_url:
            self.stack.start_api()
        return self.stack.api_url

    def gateway(self) -> tuple[str, str, str | None]:
        """(gateway URL, key, URL of the API behind it if known)."""
        if given := os.environ.get("DEMO_GATEWAY_URL"):
            key = os.environ.get("DEMO_API_KEY") or LITELLM_DEV_KEY
            return given.rstrip("/"), key, os.environ.get("DEMO_API_URL")
        api = self.api_url()
        if not self.stack.gateway_url:
            self.stack.start_litellm()
        return self.stack.gateway_url, self.stack.gateway_key, api


@pytest.fixture(scope="session")
def stack_manager(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StackManager]:
    manager = StackManager(tmp_path_factory.mktemp("stack"))
    try:
        yield manager
    finally:
        manager.stack.close()


@pytest.fixture(scope="session")
def direct_target(stack_manager: StackManager) -> Target:
    url = stack_manager.api_url()
    return Target(
        name="direct",
        base_url=url,
        api_key=(os.environ.get("DEMO_DIRECT_API_KEY") or GATEWAY_LGOS_KEY),
        idempotency_styles=direct_styles(),
        api_url=url,
        diagnostics=stack_manager.stack.diagnostics,
    )


@pytest.fixture(scope="session")
def litellm_target(stack_manager: StackManager) -> Target:
    url, key, api = stack_manager.gateway()
    return Target(
        name="litellm",
        base_url=url,
        api_key=key,
        encodes_ids=True,
        native_errors=False,
        idempotency_styles=litellm_styles(),
        api_url=api,
        diagnostics=stack_manager.stack.diagnostics,
    )


@pytest.fixture(scope="session")
def bifrost_target() -> Target:
    url = os.environ.get("DEMO_BIFROST_URL")
    if not url:
        pytest.skip("DEMO_BIFROST_URL is not set: Bifrost cannot be installed here")
    provider = os.environ.get("DEMO_BIFROST_PROVIDER") or "lgos"
    return Target(
        name="bifrost",
        base_url=url.rstrip("/"),
        api_key=(os.environ.get("DEMO_BIFROST_API_KEY") or "bifrost-dev-key"),
        provider=provider,
        model_prefix=f"{provider}/",
        native_errors=False,
        idempotency_styles=bifrost_styles(),
        api_url=os.environ.get("DEMO_API_URL"),
    )
