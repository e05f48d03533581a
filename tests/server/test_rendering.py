"""What LGOS writes for every foreground request, kept byte for byte what it wrote before it
was made cheaper: an answer's JSON (`answer_json`, orjson where it writes what pydantic-core
writes) and the random ids (`new_hex`, `uuid.uuid4().hex`)."""

from __future__ import annotations

import dataclasses
import math
import os
import struct
import uuid
from collections import OrderedDict
from datetime import UTC, datetime
from random import Random
from typing import Any

import orjson
import pytest
from fastapi import FastAPI
from langchain_core.messages import AIMessage
from langgraph.graph import MessagesState
from pydantic_core import to_json

from lgos import GraphConfig, GraphRegistry, LanggraphOpenaiServe
from lgos.http import rendering
from lgos.http.rendering import answer_json
from lgos.wire import ids
from tests.support.graphs import single_node
from tests.support.sdk import in_process_sdk

pytestmark = pytest.mark.timeout(60)


def _written(render: Any, value: Any) -> bytes | tuple[type[BaseException], str]:
    """The bytes, or the error a renderer raised (the same error, not only the same bytes)."""
    try:
        return bytes(render(value))
    except Exception as error:  # compared, not swallowed
        return type(error), str(error)


def _same(answer: Any) -> None:
    assert _written(answer_json, answer) == _written(to_json, answer), answer


def test_the_installed_orjson_writes_answers() -> None:
    # The lock's orjson agrees with pydantic-core on every probe, so answers take the cheap
    # path; an orjson that disagreed would leave every answer to pydantic-core.
    assert rendering.ORJSON_AGREES
    assert answer_json is rendering._answer_json


@pytest.mark.anyio
async def test_an_answer_taken_from_a_messages_text_is_written_by_orjson(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # LangChain's `message.text` is a `str` subclass (`TextAccessor`) that orjson refuses;
    # a run's answer passed on as it is made every answer fall back to pydantic-core.
    async def answer(state: MessagesState) -> dict[str, Any]:
        asked = state["messages"][-1].text
        assert type(asked) is not str  # what a graph's node gets from LangChain
        return {"messages": [AIMessage(content=asked)]}

    fallbacks: list[Any] = []

    def pydantic_core_writer(value: Any) -> bytes:
        fallbacks.append(value)
        return to_json(value)

    monkeypatch.setattr(rendering, "to_json", pydantic_core_writer)
    app = FastAPI()
    registry = GraphRegistry(
        graphs={"echo": GraphConfig(graph=single_node(answer), description="Echoes")}
    )
    LanggraphOpenaiServe(registry, app).bind_openai_api()
    async with in_process_sdk(app) as client:
        response = await client.responses.create(model="echo", input="hi")
        completion = await client.chat.completions.create(
            model="echo", messages=[{"role": "user", "content": "hello"}]
        )
    assert (response.output_text, completion.choices[0].message.content) == ("hi", "hello")
    assert fallbacks == []


def test_an_orjson_that_writes_a_probe_otherwise_is_not_used(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # orjson before 3.11.7 wrote 1e16 where pydantic-core writes 1e+16.
    dumps = orjson.dumps

    def short_exponents(value: Any, option: int | None = None) -> bytes:
        return dumps(value, option=option).replace(b"e+", b"e")

    monkeypatch.setattr(orjson, "dumps", short_exponents)
    assert not rendering._orjson_agrees()


def _completion(usage: dict[str, Any], content: Any = "Hello.") -> dict[str, Any]:
    return {
        "id": "chatcmpl-" + ids.new_hex(),
        "object": "chat.completion",
        "created": 1_764_900_000,
        "model": "echo",
        "system_fingerprint": ids.system_fingerprint(),
        "service_tier": "default",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, "refusal": None},
                "logprobs": None,
                "finish_reason": "stop",
            }
        ],
        "usage": usage,
    }


def _usage(input_tokens: Any = 3, cached: Any = 0) -> dict[str, Any]:
    return {
        "input_tokens": input_tokens,
        "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
        "output_tokens": 5,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 8,
    }


@dataclasses.dataclass
class Point:
    x: float
    y: int


class Tag(str):
    pass


# Values an answer can hold where the two writers part, or where orjson refuses and the answer
# must go to pydantic-core (which then writes it, or raises as it did before).
EDGES: list[Any] = [
    0.0,
    -0.0,
    0.1,
    1e-7,
    1e-4,
    9.99e-5,
    1e15,
    1e16,
    -1e16,
    1e22,
    1.7976931348623157e308,
    5e-324,
    2**53 + 1,
    2**63 - 1,
    -(2**63),
    2**64 - 1,
    2**64,
    -(2**63) - 1,
    2**70,
    "",
    "é ü 中文 😀",
    "\u2028\u2029",
    '\x00\x01\x1f\x7f " \\ / \b\f\n\r\t </script>',
    "\ud800",  # a lone surrogate: both refuse it
    True,
    None,
    [],
    {},
    (1, "a"),
    {1: "a key that is not a string"},
    b"bytes",
    uuid.UUID(int=7),
    # Values orjson writes in its own way unless told to refuse them.
    datetime(2026, 12, 5, 21, 5, tzinfo=UTC),
    Point(0.5, 2),
    Tag("a str subclass"),
    OrderedDict(a=1),
    object(),
]


@pytest.mark.parametrize("value", EDGES)
def test_edge_values_are_written_as_pydantic_core_writes_them(value: Any) -> None:
    _same(_completion(_usage(), content=value))
    _same({"id": "resp_1", "metadata": {"k": value}, "usage": None, "tools": [{"v": value}]})


@pytest.mark.parametrize(
    "usage",
    [
        _usage(),
        _usage(input_tokens=float("nan")),
        _usage(input_tokens=float("inf")),
        _usage(input_tokens=3.0),
        _usage(cached=float("nan")),
        _usage(cached=True),
        _usage(input_tokens=2**64),
        _usage(input_tokens=None),
        {"prompt_tokens": 1, "completion_tokens": 2, "total_tokens": 3},
        {"prompt_tokens": float("-inf")},
        {},
        ["not", "an", "object"],
    ],
)
def test_usage_is_written_as_pydantic_core_writes_it(usage: Any) -> None:
    # A graph's `usage_metadata` is the answer's only numbers a graph writes; pydantic-core
    # writes NaN and Infinity as such, orjson as null.
    _same(_completion(usage))


def _double(random: Random) -> float:
    """A finite double of any exponent: every bit pattern but NaN's and infinities'. Client
    JSON never holds those (the parser refuses them), and usage is checked above."""
    while True:
        value: float = struct.unpack("<d", random.getrandbits(64).to_bytes(8, "little"))[0]
        if math.isfinite(value):
            return value


def test_random_doubles_are_written_as_pydantic_core_writes_them() -> None:
    random = Random(23)
    doubles = [_double(random) for _ in range(500)]
    # And decimal-looking ones, as clients write them in schemas and settings.
    doubles += [round(random.uniform(-1e6, 1e6), random.randint(0, 9)) for _ in range(500)]
    for value in doubles:
        _same({"value": value, "usage": None})
    _same({"values": doubles, "usage": None})


def _json_value(random: Random, depth: int = 0) -> Any:
    """Client JSON, as a tool's schema or a `text.format` echoes it."""
    kind = random.randrange(8 if depth < 3 else 5)
    if kind == 0:
        return random.choice(TEXTS)
    if kind == 1:
        return (
            random.randint(-(2**63), 2**64 - 1) if random.random() < 0.1 else random.randint(-9, 99)
        )
    if kind == 2:
        return _double(random) if random.random() < 0.5 else random.uniform(0, 2)
    if kind == 3:
        return random.choice([True, False, None])
    if kind == 4:
        return random.choice([2**64, -(2**63) - 1, 1e16, 1e-7, 0.1])
    if kind == 5:
        return [_json_value(random, depth + 1) for _ in range(random.randrange(4))]
    return {
        random.choice(TEXTS) + str(n): _json_value(random, depth + 1)
        for n in range(random.randrange(4))
    }


TEXTS = ["", "a", "Hello, world.", "é€", "😀", "\u2028", 'q"\\/', "\n\t\r\b\f", "\x00\x1f\x7f"]


def _random_usage(random: Random) -> dict[str, Any]:
    def count() -> Any:
        roll = random.random()
        if roll < 0.85:
            return random.randint(0, 100_000)
        return random.choice([float("nan"), 1.5, 2.0, True, 2**64, -1, None])

    return {
        "input_tokens": count(),
        "input_tokens_details": {"cached_tokens": count(), "cache_write_tokens": count()},
        "output_tokens": count(),
        "output_tokens_details": {"reasoning_tokens": count()},
        "total_tokens": count(),
    }


def _random_response(random: Random) -> dict[str, Any]:
    text = "".join(random.choice(TEXTS) for _ in range(random.randrange(6)))
    return {
        "id": "resp_" + ids.new_hex(),
        "object": "response",
        "created_at": random.randint(0, 2**40),
        "completed_at": random.choice([None, random.randint(0, 2**40)]),
        "status": random.choice(["completed", "failed", "in_progress"]),
        "model": random.choice(TEXTS),
        "output": [
            {
                "type": "message",
                "id": "msg_" + ids.new_hex(),
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            },
            {
                "type": "function_call",
                "call_id": random.choice(TEXTS),
                "arguments": str(_json_value(random)),
            },
        ][: random.randrange(3)],
        "usage": random.choice([None, _random_usage(random)]),
        "metadata": {random.choice(TEXTS): random.choice(TEXTS) for _ in range(3)},
        "tools": [_json_value(random) for _ in range(random.randrange(3))],
        "temperature": 1.0,
        "text": {"format": {"type": "json_schema", "schema": _json_value(random)}},
    }


def test_random_answers_are_written_as_pydantic_core_writes_them() -> None:
    random = Random(5)
    for _ in range(1000):
        _same(_random_response(random))
    for _ in range(1000):
        usage = {
            "prompt_tokens": random.randint(0, 10**6),
            "completion_tokens": random.randint(0, 10**6),
            "total_tokens": random.choice([random.randint(0, 10**6), float("nan"), 2**65]),
            "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
        }
        _same(_completion(usage, content=random.choice([*TEXTS, None])))


def test_new_ids_are_random_uuid4_hex() -> None:
    made = [ids.new_hex() for _ in range(2000)]
    assert len(set(made)) == len(made)
    for value in made:
        parsed = uuid.UUID(hex=value)
        assert parsed.hex == value
        assert parsed.version == 4
        assert parsed.variant == uuid.RFC_4122
    # Every other bit is random: each takes both values across the ids.
    fixed = (0xF000 << 64) | (0xC000 << 48)
    ones = zeros = 0
    for value in made:
        number = int(value, 16)
        ones |= number
        zeros |= ~number
    assert (ones & zeros) | fixed == (1 << 128) - 1


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
def test_a_forked_child_makes_ids_of_its_own() -> None:
    # Ids come from batches of random bytes: a child forked while its parent holds a batch
    # must not hand out the parent's next ids.
    ids.new_hex()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the child
        os.close(read)
        os.write(write, " ".join(ids.new_hex() for _ in range(3)).encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        made_by_child = pipe.read().decode().split()
    os.waitpid(child, 0)
    made_by_parent = [ids.new_hex() for _ in range(3)]
    assert len(made_by_child) == 3
    assert not set(made_by_child) & set(made_by_parent)
