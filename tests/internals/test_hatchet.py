"""The Hatchet SDK still starts its action listener the way `lgos/integrations/hatchet/internals.py`
relies on: an upgrade that changes it fails here, not as a stopped worker that silently keeps
its runs (issue 29: the listener child would go on heartbeating for it)."""

from __future__ import annotations

import functools
import inspect
import pickle

import hatchet_sdk.worker.worker as sdk_worker
import pytest

from lgos.integrations.hatchet import internals
from lgos.integrations.hatchet.liveness import watch_parent


def test_the_listener_is_a_module_function_the_worker_looks_up_when_it_starts_it() -> None:
    listener = getattr(sdk_worker, internals._LISTENER)
    assert inspect.isfunction(listener)
    # Looked up as a global of the module each time (not bound at import), so the wrapper put
    # on the module is the one started.
    start = sdk_worker.Worker._start_action_listener
    assert internals._LISTENER in start.__code__.co_names
    assert "target" in inspect.getsource(start)


def test_the_watch_wraps_the_listener_so_spawn_can_pickle_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    original = getattr(sdk_worker, internals._LISTENER)
    monkeypatch.setattr(sdk_worker, internals._LISTENER, original)
    shared = object()
    assert internals.watch_worker_from_listener(shared) is True
    wrapped = getattr(sdk_worker, internals._LISTENER)
    assert isinstance(wrapped, functools.partial)
    assert wrapped.func is watch_parent
    assert wrapped.args == (shared, original)
    # Spawn pickles the target by reference: both functions must be module-level names.
    plain = functools.partial(watch_parent, None, original)
    assert pickle.loads(pickle.dumps(plain)).args == (None, original)
    # Installed once: a second call (a second worker in the process) leaves it as it is.
    assert internals.watch_worker_from_listener(shared) is False
    assert getattr(sdk_worker, internals._LISTENER) is wrapped
