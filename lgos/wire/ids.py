"""OpenAI-style ids, and the ids that carry LGOS run identity.

A Response that belongs to a run (a pausable graph, or a background job) has a 64-hex body:
`resp_<run uuid hex><nonce uuid hex>`. The run id finds the checkpoint; for background
Responses the nonce is the engine's run UUID, so any API instance can answer for any id
without a lookup table. Interrupt call ids carry the run too (see `wire.interrupts`).
"""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from importlib.metadata import PackageNotFoundError, version

_RUN_RESPONSE = re.compile(r"resp_([0-9a-f]{32})([0-9a-f]{32})")
_CONVERSATION = re.compile(r"conv_([0-9a-f]{32})")


@functools.cache
def system_fingerprint() -> str:
    """`fp_` and ten hex digits, like OpenAI's; it names the LGOS release that served the
    completion, so it changes only when LGOS does (the graphs' code is not part of it)."""
    try:
        release = version("lgos")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        release = "0.0.0"
    return "fp_" + hashlib.sha256(f"lgos {release}".encode()).hexdigest()[:10]


# Ids are cut from one read of the system's random source, `_BATCH` at a time: a read of 16
# bytes costs about 0.4 µs, most of an id's making, and every request makes one or two. Each
# id is handed out once (`next` on the batch runs no Python code, so it is one step under
# the GIL and two threads never get the same one), and a forked child drops its parent's
# batch, so two processes never hand out the same ids.
_BATCH = 32
# Byte by byte, what `uuid.UUID(version=4)` does to bytes 6 (the version) and 8 (the variant).
_VERSION = bytes(value & 0x0F | 0x40 for value in range(256))
_VARIANT = bytes(value & 0x3F | 0x80 for value in range(256))
# Where each id's 32 hex digits are in a batch's hex (sliced in C, as the ids are taken).
_IDS_IN_BATCH = tuple(slice(start, start + 32) for start in range(0, 32 * _BATCH, 32))
_batch: Iterator[str] = iter(())


def _new_batch() -> Iterator[str]:
    raw = bytearray(os.urandom(16 * _BATCH))
    raw[6::16] = raw[6::16].translate(_VERSION)
    raw[8::16] = raw[8::16].translate(_VARIANT)
    return map(raw.hex().__getitem__, _IDS_IN_BATCH)


def _forget_batch() -> None:
    global _batch
    _batch = iter(())


if hasattr(os, "register_at_fork"):  # not on Windows, which has no fork
    os.register_at_fork(after_in_child=_forget_batch)


def new_hex() -> str:
    """`uuid.uuid4().hex`: 16 random bytes with the version (4) and the RFC 4122 variant set,
    as `uuid.UUID` sets them, without building the UUID or a 128-bit integer (every request
    makes a few)."""
    global _batch
    value = next(_batch, None)
    if value is None:
        _batch = _new_batch()
        value = next(_batch)
    return value


def response_id() -> str:
    return f"resp_{new_hex()}"


def message_id() -> str:
    return f"msg_{new_hex()}"


def reasoning_id() -> str:
    return "rs_" + new_hex()


def function_call_item_id() -> str:
    return f"fc_{new_hex()}"


def function_call_output_id() -> str:
    return f"fco_{new_hex()}"


def conversation_id(run_id: str | None = None) -> str:
    """`conv_<32 hex>`: the hex is also the run id of the conversation's graph threads."""
    return f"conv_{run_id or new_hex()}"


def parse_conversation_id(value: str) -> str | None:
    """The run id inside a conversation id, or None when it is not one of ours."""
    match = _CONVERSATION.fullmatch(value)
    return match[1] if match else None


def tool_call_id() -> str:
    return f"call_{new_hex()}"


def chat_completion_id() -> str:
    return f"chatcmpl-{new_hex()}"


@dataclass(frozen=True, slots=True)
class RunResponseId:
    run_id: str
    nonce: str

    def __str__(self) -> str:
        return f"resp_{self.run_id}{self.nonce}"


def run_response_id(run_id: str, nonce: str | None = None) -> RunResponseId:
    return RunResponseId(run_id, nonce or new_hex())


def parse_run_response_id(value: str) -> RunResponseId | None:
    match = _RUN_RESPONSE.fullmatch(value)
    if match is None:
        return None
    return RunResponseId(match[1], match[2])
