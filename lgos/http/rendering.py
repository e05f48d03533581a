"""The one JSON renderer of every LGOS reply."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from typing import Any

import orjson
from pydantic_core import to_json
from starlette.responses import Response


class JSON(Response):
    """JSON rendered by pydantic-core: faster than the stdlib encoder on large Responses."""

    media_type = "application/json"

    # Any: Starlette's `render` takes whatever the reply carries (a wire TypedDict, say).
    def render(self, content: Any) -> bytes:
        return to_json(content)


# Values orjson would write in its own way (dataclasses, dates, subclasses of the JSON types)
# raise instead, and go to pydantic-core.
_OPTIONS = (
    orjson.OPT_PASSTHROUGH_DATACLASS
    | orjson.OPT_PASSTHROUGH_DATETIME
    | orjson.OPT_PASSTHROUGH_SUBCLASS
)

# What an answer carries, at the edges where two JSON writers may part: floats around the
# thresholds of the exponent form and of the shortest round trip, integers at 64 bits,
# non-ASCII text and every kind of escape. orjson before 3.11.7 writes `1e16` where
# pydantic-core writes `1e+16`, for one.
_PROBES: tuple[object, ...] = (
    {
        "floats": [
            0.0,
            -0.0,
            1.0,
            0.1,
            0.3,
            1 / 3,
            2.5e-5,
            1e-4,
            1e-5,
            1e-7,
            123456.789,
            1e15,
            1e16,
            1.5e16,
            1e17,
            1e21,
            1e22,
            -1e16,
            1.7976931348623157e308,
            5e-324,
            2.2250738585072014e-308,
            9007199254740993.0,
        ],
        "integers": [0, -1, 2**53 + 1, 2**63 - 1, -(2**63), 2**64 - 1],
        "text": 'é ü 中文 😀 \u2028\u2029 \x00\x01\x1f\x7f " \\ / \b\f\n\r\t </script>',
        "constants": [True, False, None],
        "nested": {"empty": {}, "list": [], "tuple": (1, "a")},
        "id": uuid.UUID(int=0x1234_5678_9ABC_4DEF_8123_4567_89AB_CDEF),
    },
)


def _orjson_agrees() -> bool:
    """Whether the installed orjson writes each probe as pydantic-core does."""
    try:
        return all(orjson.dumps(probe, option=_OPTIONS) == to_json(probe) for probe in _PROBES)
    except (TypeError, ValueError):  # an orjson too old for an option, or a value it refuses
        return False


def _counts(usage: Mapping[str, Any]) -> bool:
    """Whether a usage object holds integers only (its detail objects too): the one part of
    an answer a graph writes as numbers (`usage_metadata`), where a float could be `NaN`,
    which orjson writes as `null` and pydantic-core as `NaN`."""
    for value in usage.values():
        if type(value) is dict:
            for detail in value.values():
                if type(detail) is not int:
                    return False
        elif type(value) is not int:
            return False
    return True


def _answer_json(answer: Mapping[str, Any]) -> bytes:
    usage = answer.get("usage")
    if usage is not None and (type(usage) is not dict or not _counts(usage)):
        return to_json(answer)
    try:
        return orjson.dumps(answer, option=_OPTIONS)
    except orjson.JSONEncodeError:  # an integer past 64 bits, a key that is not a string, ...
        return to_json(answer)


def _pydantic_answer_json(answer: Mapping[str, Any]) -> bytes:
    return to_json(answer)


ORJSON_AGREES = _orjson_agrees()

answer_json: Callable[[Mapping[str, Any]], bytes] = (
    _answer_json if ORJSON_AGREES else _pydantic_answer_json
)
"""`to_json(answer)`, byte for byte, for a completion or a Response: written by orjson when
the installed orjson writes the probes as pydantic-core does (for an `echo` answer, 16k CPU
instructions against 24k on Chat, 22k against 45k on Responses), else by pydantic-core.

The two part on `NaN` and infinities (orjson writes `null`): an answer's only numbers a graph
writes are its usage, checked to be integers; the rest (client JSON echoed back) came through
the request parser, which refuses them. Anything orjson refuses (an integer past 64 bits, a
key that is not a string, a date, a dataclass, a subclass of a JSON type) goes to
pydantic-core, which writes it, or raises, as it did before."""


class AnswerJSON(JSON):
    """A foreground answer (a chat completion, a Response), rendered by `answer_json`."""

    def render(self, content: Any) -> bytes:
        return answer_json(content)
