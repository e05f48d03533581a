"""The one private name of the Hatchet SDK that LGOS relies on, in one place (hatchet-sdk 1.43).

The SDK's `Worker` starts its action listener process with the module-level function
`hatchet_sdk.worker.worker.worker_action_listener_process`, looked up when it starts it. LGOS
puts `liveness.watch_parent` in front of it, so the listener watches the worker process it
heartbeats for (see `liveness`).
"""

from __future__ import annotations

import functools
import sys
from typing import Any

import hatchet_sdk.worker.worker as sdk_worker

from lgos.integrations.hatchet.liveness import watch_parent

_LISTENER = "worker_action_listener_process"


def watch_worker_from_listener(shared: Any) -> bool:
    """Have every listener process started from now on watch this process; False when this
    SDK starts its listener some other way, or off Linux (then nothing is changed)."""
    if sys.platform != "linux":  # the watch needs prctl and /proc
        return False
    original = getattr(sdk_worker, _LISTENER, None)
    if not callable(original) or isinstance(original, functools.partial):
        return False
    # A partial of module-level functions: spawn pickles it by name for the child.
    setattr(sdk_worker, _LISTENER, functools.partial(watch_parent, shared, original))
    return True
