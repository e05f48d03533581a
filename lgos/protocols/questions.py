"""A paused graph's question as text, the same on every agent protocol (MCP's elicitation
message, A2A's `input-required` status)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from lgos.core.run_events import PendingInterrupt
from lgos.wire.interrupts import RESPONSE_SCHEMA_KEY, parse_interrupt_call_id

# Keys of an `interrupt()` value that steer how LGOS asks (choices, free answers), not details
# to show the person.
STEERING_KEYS = frozenset({"question", "choices", "allow_other", "kind", "always"})


def question_text(value: Any) -> str:
    """The question, with its other details (a report to review, say) below it."""
    if isinstance(value, str):
        return value
    if not isinstance(value, Mapping):
        return json.dumps(value)
    lines = [str(value.get("question") or "Please review.")]
    for key, detail in value.items():
        if key not in STEERING_KEYS:
            lines.append(f"{key}: {detail if isinstance(detail, str) else json.dumps(detail)}")
    return "\n".join(lines)


def pending_of_call(call_id: str, arguments: str) -> tuple[str, PendingInterrupt]:
    """A paused background Response's `lgos_interrupt` call as (run id, the pending question):
    the call's arguments are the `interrupt()` value, its answer schema under a reserved key."""
    value = json.loads(arguments)
    schema = None
    if isinstance(value, dict) and RESPONSE_SCHEMA_KEY in value:
        schema = value.pop(RESPONSE_SCHEMA_KEY)
        if value.keys() == {"value"}:  # a value that was not an object, wrapped to carry it
            value = value["value"]
    parsed = parse_interrupt_call_id(call_id)
    assert parsed is not None, "an lgos_interrupt call id names its run"
    run_id, interrupt_id = parsed
    answer_schema = schema if isinstance(schema, dict) else None
    return run_id, PendingInterrupt(id=interrupt_id, value=value, response_schema=answer_schema)
