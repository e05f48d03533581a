"""The one name for JSON whose shape LGOS does not own and never reads field by field."""

from __future__ import annotations

from typing import Any

# A JSON Schema document: a client's (a function tool's `parameters`, a response format's
# `schema`), a graph's (an interrupt's response schema, its client settings') or one LGOS
# builds for MCP. Arbitrary JSON by definition: LGOS passes it on, or checks values against
# it with `jsonschema`; every use of this name is such a schema (docs/design-choices.md).
JsonSchema = dict[str, Any]
