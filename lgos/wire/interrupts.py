"""The interrupt vocabulary of both APIs: how a paused run's questions look on the wire.

A pending interrupt becomes a function call named `lgos_interrupt`; its call id carries the
run (`call_<run hex><interrupt id>`), so Chat Completions clients, who have no
`previous_response_id`, can answer it too; its arguments are the question as JSON, with a
response schema under a reserved key. Decoders read answers with the same names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from lgos.core.run_events import PendingInterrupt

INTERRUPT_FUNCTION = "lgos_interrupt"
RESPONSE_SCHEMA_KEY = "lgos_response_schema"

_INTERRUPT_CALL = re.compile(r"call_([0-9a-f]{32})([0-9a-f]{32})")


def interrupt_call_id(run_id: str, interrupt_id: str) -> str:
    return f"call_{run_id}{interrupt_id}"


def parse_interrupt_call_id(value: str) -> tuple[str, str] | None:
    """(run id, LangGraph interrupt id), or None when it is not an interrupt call id."""
    match = _INTERRUPT_CALL.fullmatch(value)
    if match is None:
        return None
    return match[1], match[2]


def interrupt_arguments(pending: PendingInterrupt) -> str:
    """The question as JSON; a response schema rides along under a reserved key."""
    if pending.response_schema is None:
        return json.dumps(pending.value)
    value = pending.value
    body = dict(value) if isinstance(value, Mapping) else {"value": value}
    body[RESPONSE_SCHEMA_KEY] = pending.response_schema
    return json.dumps(body)
