"""What the demo's fake model says about the images and files it receives.

It reads LangChain's standard content blocks: inline data is measured (bytes, and pixels for
PNG, GIF and JPEG, read from the file header), a URL is only named (nothing is fetched).
"""

from __future__ import annotations

import base64
import binascii
import struct
from collections.abc import Iterable, Mapping
from typing import Any


def describe_blocks(blocks: Iterable[Mapping[str, Any]]) -> list[str]:
    return [describe_block(block) for block in blocks if block.get("type") in ("image", "file")]


def describe_block(block: Mapping[str, Any]) -> str:
    kind = "an image" if block["type"] == "image" else "a file"
    extras = block.get("extras") or {}
    filename = extras.get("filename")
    label = f"{kind} '{filename}'" if filename else kind
    if block.get("url"):
        return f"{label} at {block['url']} (not downloaded)"
    if block.get("file_id"):
        return f"{label} with id {block['file_id']}"
    data = _decoded(str(block.get("base64", "")))
    facts = [str(block.get("mime_type") or "unknown type"), f"{len(data)} bytes"]
    size = image_size(data) if block["type"] == "image" else None
    if size is not None:
        facts.append(f"{size[0]}x{size[1]} pixels")
    return f"{label} ({', '.join(facts)})"


def _decoded(data: str) -> bytes:
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return b""


def image_size(data: bytes) -> tuple[int, int] | None:
    """Width and height from a PNG, GIF or JPEG header; None for other formats."""
    if data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) >= 24:
        width, height = struct.unpack(">II", data[16:24])
        return width, height
    if data[:6] in (b"GIF87a", b"GIF89a") and len(data) >= 10:
        width, height = struct.unpack("<HH", data[6:10])
        return width, height
    if data.startswith(b"\xff\xd8"):
        return _jpeg_size(data)
    return None


# JPEG start-of-frame markers (baseline, progressive, ...), which carry the dimensions.
_SOF_MARKERS = frozenset({0xC0, 0xC1, 0xC2, 0xC3, 0xC5, 0xC6, 0xC7, 0xC9, 0xCA, 0xCB, 0xCD})


def _jpeg_size(data: bytes) -> tuple[int, int] | None:
    position = 2
    while position + 9 <= len(data):
        if data[position] != 0xFF:
            return None
        marker = data[position + 1]
        length = struct.unpack(">H", data[position + 2 : position + 4])[0]
        if marker in _SOF_MARKERS:
            height, width = struct.unpack(">HH", data[position + 5 : position + 9])
            return width, height
        position += 2 + length
    return None
