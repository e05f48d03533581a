"""JSON from clients, parsed within limits that keep hostile input a 400.

The standard parser fails in ways that are not the client's fault to see: nesting a thousand
levels deep raises `RecursionError`, an integer of 4,301 digits raises `ValueError`, and a NUL
character parses fine but cannot be stored in a PostgreSQL text or jsonb column later. Every
JSON a client sends (the body, function call `arguments`, structured interrupt answers,
`metadata.lgos_settings`) goes through `loads`, which turns each of these into
`JSONLimitError` naming where it happened.
"""

from __future__ import annotations

import json
from typing import Any

from lgos.core.errors import InvalidRequestError

__all__ = ["MAX_DEPTH", "MAX_NUMBER_CHARS", "JSONLimitError", "loads"]

# Far deeper than any real request (an OpenAI body is about 6 levels, tool arguments rarely
# 20), far shallower than the interpreter's recursion limit.
MAX_DEPTH = 64
# Longer than any number a client means (a 128-bit id has 39 digits); JSON numbers beyond
# 2**53 lose precision in JavaScript clients anyway.
MAX_NUMBER_CHARS = 100


class JSONLimitError(ValueError):
    """Valid JSON that breaks a limit; `path` locates it (keys and list indexes)."""

    def __init__(self, problem: str, path: tuple[int | str, ...] = ()) -> None:
        super().__init__(problem)
        self.problem = problem
        self.path = path

    def refusal(self, param: str | None, where: str | None = None) -> InvalidRequestError:
        """The 400 a client gets for it: `param` names the field or JSON string that holds it."""
        place = where or f"'{param}'"
        return InvalidRequestError(
            f"Invalid {place}: {self.problem} is not accepted.", param=param, code="invalid_value"
        )


class _Rejected:
    """Stands in for a number the parser met; the walk reports it with its path."""

    __slots__ = ("problem",)

    def __init__(self, problem: str) -> None:
        self.problem = problem


def _parse_int(text: str) -> int | _Rejected:
    if len(text) > MAX_NUMBER_CHARS:
        return _Rejected(f"a number longer than {MAX_NUMBER_CHARS} characters")
    return int(text)


def _parse_float(text: str) -> float | _Rejected:
    if len(text) > MAX_NUMBER_CHARS:
        return _Rejected(f"a number longer than {MAX_NUMBER_CHARS} characters")
    value = float(text)
    if value in (float("inf"), float("-inf")):
        return _Rejected("a number too large to represent")
    return value


def _parse_constant(text: str) -> _Rejected:
    return _Rejected(f"'{text}', which is not valid JSON")


class _RefusedNumberError(Exception):
    """A number the parser refused: parsing stops, and `loads` parses again to locate it."""


def _checked_int(text: str) -> int:
    value = _parse_int(text)
    if isinstance(value, _Rejected):
        raise _RefusedNumberError
    return value


def _checked_float(text: str) -> float:
    value = _parse_float(text)
    if isinstance(value, _Rejected):
        raise _RefusedNumberError
    return value


def _refused_constant(text: str) -> float:
    raise _RefusedNumberError


# Decoders shared by every call: `json.loads` with hooks builds a new decoder and scanner each
# time, which cost as much as parsing a small request body. The first stops at a refused
# number; the second, used only then, leaves a placeholder where it was, for the walk to
# report with its path.
_DECODER = json.JSONDecoder(
    parse_int=_checked_int, parse_float=_checked_float, parse_constant=_refused_constant
)
_LOCATING_DECODER = json.JSONDecoder(
    parse_int=_parse_int, parse_float=_parse_float, parse_constant=_parse_constant
)


def loads(text: str | bytes) -> Any:
    """Parse JSON; raise `json.JSONDecodeError` (or `UnicodeDecodeError`) for a syntax error
    and `JSONLimitError` for valid JSON that is too deep, has an oversized number, or a NUL."""
    # What `json.loads` does before decoding: refuse a BOM in text, detect a bytes encoding.
    if isinstance(text, str):
        if text.startswith("\ufeff"):
            raise json.JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", text, 0)
    else:
        text = text.decode(json.detect_encoding(text), "surrogatepass")
    try:
        value = _DECODER.decode(text)
    except _RefusedNumberError:
        _check(_LOCATING_DECODER.decode(text))  # raises JSONLimitError, with the path
        raise JSONLimitError("a number out of range") from None  # pragma: no cover
    except RecursionError:
        # Deeper than the interpreter allows: the value never existed, so find the place
        # from the text itself.
        raise JSONLimitError(_too_deep(), _deep_field(text)) from None
    if _may_break_limits(text):
        _check(value)
    return value


def _may_break_limits(text: str) -> bool:
    """Whether the walk can find anything: the parser refused every bad number already, a NUL
    can only arrive escaped (JSON strings cannot hold raw control characters), and a value
    nests no deeper than the brackets its text holds. False for nearly every request, which
    then skips the walk."""
    return "\\u0000" in text or text.count("{") + text.count("[") > MAX_DEPTH


def _too_deep() -> str:
    return f"JSON nested more than {MAX_DEPTH} levels deep"


def _check(root: Any) -> None:
    if not _within_limits(root):
        _locate_breach(root)


def _within_limits(root: Any) -> bool:
    """The check of every request body: depth counts only, no paths (paths are built only
    to report a breach). Iterative, so checking a deep value cannot overflow the stack."""
    stack: list[tuple[Any, int]] = [(root, 0)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            if "\x00" in value:
                return False
        elif isinstance(value, dict):
            if depth >= MAX_DEPTH:
                return False
            for key, item in value.items():
                if "\x00" in key:
                    return False
                stack.append((item, depth + 1))
        elif isinstance(value, list):
            if depth >= MAX_DEPTH:
                return False
            stack.extend((item, depth + 1) for item in value)
        elif isinstance(value, _Rejected):
            return False
    return True


def _locate_breach(root: Any) -> None:
    """Raise `JSONLimitError` for the first breach, with its path."""
    stack: list[tuple[Any, tuple[int | str, ...]]] = [(root, ())]
    while stack:
        value, path = stack.pop()
        if isinstance(value, str):
            if "\x00" in value:
                raise JSONLimitError("a NUL character (\\u0000) in a string", path)
        elif isinstance(value, dict):
            if len(path) >= MAX_DEPTH:
                raise JSONLimitError(_too_deep(), path[:1])
            for key, item in value.items():
                if "\x00" in key:
                    raise JSONLimitError("a NUL character (\\u0000) in a key", path)
                stack.append((item, (*path, key)))
        elif isinstance(value, list):
            if len(path) >= MAX_DEPTH:
                raise JSONLimitError(_too_deep(), path[:1])
            stack.extend((item, (*path, index)) for index, item in enumerate(value))
        elif isinstance(value, _Rejected):
            raise JSONLimitError(value.problem, path)


def _deep_field(text: str | bytes) -> tuple[int | str, ...]:
    """The top-level key under which `text` first nests past MAX_DEPTH (empty if none)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    depth = 0
    in_string = escaped = False
    string_start = 0
    last_string = ""
    last_top_key: str | None = None
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                last_string = text[string_start + 1 : index]
        elif char == '"':
            in_string = True
            string_start = index
        elif char in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                break
        elif char in "]}":
            depth -= 1
        elif char == ":" and depth == 1:
            last_top_key = last_string
    if last_top_key is None:
        return ()
    try:
        return (json.loads(f'"{last_top_key}"'),)
    except json.JSONDecodeError:
        return (last_top_key,)
