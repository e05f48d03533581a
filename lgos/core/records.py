"""`per_request`: a slotted dataclass that type checkers hold read-only, built at plain cost.

A frozen dataclass's generated `__init__` sets every field through `object.__setattr__` (about
three times the work of a plain attribute store, docs/benchmarks.md); the classes here are
built from every request and read by the one request that built them, so nothing needs them
frozen at run time: none is hashed (each holds a dict, a message or another unhashable value)
and none is shared between requests. Type checkers still treat them as frozen, so LGOS's own
code cannot assign to a field (mypy: "Property ... is read-only"); `dataclasses.replace`
makes a changed copy, as it does for a frozen class. Values that are shared (the request a
graph's nodes read, the constants built once, a stored record) stay frozen or are copies.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TypeVar, dataclass_transform

_T = TypeVar("_T")


@dataclass_transform(frozen_default=True, field_specifiers=(field,))
def per_request(cls: type[_T]) -> type[_T]:
    """`@dataclass(slots=True)`, frozen to type checkers only (see the module's docstring)."""
    return dataclass(slots=True)(cls)
