"""The compose stacks' engine and images are prepared while the session runs
(tests/compose/prepare.py), from the end of collection."""

from __future__ import annotations

import pytest

from . import prepare


def pytest_collection_finish(session: pytest.Session) -> None:
    prepare.on_collection_finish(session)
