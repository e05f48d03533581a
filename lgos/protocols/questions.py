"""A paused graph's question as text, the same on every agent protocol (MCP's elicitation
message, A2A's `input-required` status)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

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
