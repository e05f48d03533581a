"""Images and files in messages: OpenAI content parts to LangChain standard content blocks.

Both APIs' parts (Responses `input_image` / `input_file`, Chat `image_url` / `file`) become
`{"type": "image" | "file", "url" | "base64", "mime_type", "extras": {...}}` blocks, the form
LangChain's chat models (ChatOpenAI, ChatAnthropic, ...) send on to their providers.

Inline data is checked here: valid base64, a MIME type this server passes on, an image whose
bytes are of its declared type, and size and count limits. URLs are passed on as URLs and never
fetched by LGOS (no request from the server to an address the client chose).
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
import re
from collections.abc import Iterable
from typing import Any, Literal, TypeGuard

from langchain_core.messages.content import FileContentBlock, ImageContentBlock
from pydantic import BaseModel, ConfigDict

from lgos.core.capabilities import Demand
from lgos.core.errors import InvalidRequestError
from lgos.core.registry import GraphFeature

# One inline image or file, decoded (the request body limit usually binds first).
MAX_INLINE_BYTES = 20 * 1024 * 1024
# Images and files in one request, history included.
MAX_ATTACHMENTS = 50
MAX_URL_CHARS = 8192

# Image types vision models take, and the bytes each starts with.
IMAGE_SIGNATURES: dict[str, tuple[bytes, ...]] = {
    "image/png": (b"\x89PNG\r\n\x1a\n",),
    "image/jpeg": (b"\xff\xd8\xff",),
    "image/gif": (b"GIF87a", b"GIF89a"),
    "image/webp": (b"RIFF",),
}
# File types passed on (documents and text); other types are refused by name.
FILE_TYPES = frozenset(
    {
        "application/pdf",
        "application/json",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    }
)

_DATA_URL = re.compile(
    r"^data:(?P<mime>[\w.+-]+/[\w.+-]+)(?:;[\w=.+-]+)*;base64,(?P<data>.*)$", re.S
)


class InputImage(BaseModel):
    """Responses `input_image`."""

    model_config = ConfigDict(extra="forbid", strict=True)
    type: Literal["input_image"]
    image_url: str | None = None
    file_id: str | None = None
    detail: Literal["low", "high", "auto", "original"] | None = None


class InputFile(BaseModel):
    """Responses `input_file`."""

    model_config = ConfigDict(extra="forbid", strict=True)
    type: Literal["input_file"]
    file_data: str | None = None
    file_url: str | None = None
    file_id: str | None = None
    filename: str | None = None


class ImageUrl(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    url: str
    detail: Literal["low", "high", "auto"] | None = None


class ChatImagePart(BaseModel):
    """Chat `image_url` part."""

    model_config = ConfigDict(extra="forbid", strict=True)
    type: Literal["image_url"]
    image_url: ImageUrl


class ChatFile(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True)
    file_data: str | None = None
    file_id: str | None = None
    filename: str | None = None


class ChatFilePart(BaseModel):
    """Chat `file` part."""

    model_config = ConfigDict(extra="forbid", strict=True)
    type: Literal["file"]
    file: ChatFile


MediaPart = InputImage | InputFile | ChatImagePart | ChatFilePart


def is_media(part: Any) -> TypeGuard[MediaPart]:
    return isinstance(part, InputImage | InputFile | ChatImagePart | ChatFilePart)


def demand(part: MediaPart, param: str) -> Demand:
    """What the part needs the graph to declare (param names the part's `type`)."""
    if isinstance(part, InputImage | ChatImagePart):
        return Demand(GraphFeature.IMAGE_INPUT, f"{param}.type", "images", "unsupported_value")
    return Demand(GraphFeature.FILE_INPUT, f"{param}.type", "files", "unsupported_value")


def check_count(demands: Iterable[Demand]) -> None:
    count = sum(
        1 for item in demands if item.feature in (GraphFeature.IMAGE_INPUT, GraphFeature.FILE_INPUT)
    )
    if count > MAX_ATTACHMENTS:
        raise InvalidRequestError(
            f"Invalid 'input': {count} images and files, more than the {MAX_ATTACHMENTS} one "
            "request may carry.",
            param="input",
            code="invalid_value",
        )


def block(part: MediaPart, param: str) -> ImageContentBlock | FileContentBlock:
    """The LangChain standard content block for one part (checked; `param` names it)."""
    if isinstance(part, InputImage):
        if part.file_id is not None or part.image_url is None:
            raise _no_file_ids(f"{param}.image_url")
        return _image(part.image_url, part.detail, f"{param}.image_url")
    if isinstance(part, ChatImagePart):
        return _image(part.image_url.url, part.image_url.detail, f"{param}.image_url.url")
    if isinstance(part, InputFile):
        return _file(part.file_data, part.file_url, part.file_id, part.filename, param)
    return _file(part.file.file_data, None, part.file.file_id, part.file.filename, f"{param}.file")


def _no_file_ids(param: str) -> InvalidRequestError:
    return InvalidRequestError(
        f"Invalid '{param}': this server has no Files API, so 'file_id' cannot be resolved; "
        "send the data inline (a base64 data URL) or a URL.",
        param=param,
        code="missing_required_parameter",
    )


def _image(url: str, detail: str | None, param: str) -> ImageContentBlock:
    extras = {"detail": detail} if detail else {}
    if url.startswith("data:"):
        mime, data = _data_url(url, param)
        if mime not in IMAGE_SIGNATURES:
            raise InvalidRequestError(
                f"Invalid '{param}': '{mime}' images are not supported; send PNG, JPEG, GIF or "
                "WebP.",
                param=param,
                code="unsupported_value",
            )
        decoded = _decoded(data, param)
        if not decoded.startswith(IMAGE_SIGNATURES[mime]) or (
            mime == "image/webp" and decoded[8:12] != b"WEBP"
        ):
            raise InvalidRequestError(
                f"Invalid '{param}': the data is not a {mime} image.",
                param=param,
                code="invalid_value",
            )
        return {"type": "image", "base64": data, "mime_type": mime, "extras": extras}
    return {"type": "image", "url": _web_url(url, param), "extras": extras}


def _file(
    file_data: str | None,
    file_url: str | None,
    file_id: str | None,
    filename: str | None,
    param: str,
) -> FileContentBlock:
    extras = {"filename": filename} if filename else {}
    given = [name for name, value in (("file_data", file_data), ("file_url", file_url)) if value]
    if file_id is not None and not given:
        raise _no_file_ids(f"{param}.file_id")
    if len(given) != 1:
        raise InvalidRequestError(
            f"Invalid '{param}': send exactly one of 'file_data' or 'file_url'.",
            param=param,
            code="invalid_value",
        )
    if file_url is not None:
        return {"type": "file", "url": _web_url(file_url, f"{param}.file_url"), "extras": extras}
    assert file_data is not None
    where = f"{param}.file_data"
    if file_data.startswith("data:"):
        mime, data = _data_url(file_data, where)
    else:
        # Bare base64 (some clients send it): the type comes from the file name.
        guessed = mimetypes.guess_type(filename or "")[0]
        if guessed is None:
            raise InvalidRequestError(
                f"Invalid '{where}': send a data URL (data:<type>;base64,...) or a 'filename' "
                "whose extension names the type.",
                param=where,
                code="invalid_value",
            )
        mime, data = guessed, file_data
    if mime.startswith("image/"):
        raise InvalidRequestError(
            f"Invalid '{where}': send images as input_image / image_url parts.",
            param=where,
            code="unsupported_value",
        )
    if mime not in FILE_TYPES and not mime.startswith("text/"):
        raise InvalidRequestError(
            f"Invalid '{where}': '{mime}' files are not supported; send PDF, text, JSON or "
            "Office documents.",
            param=where,
            code="unsupported_value",
        )
    _decoded(data, where)
    return {"type": "file", "base64": data, "mime_type": mime, "extras": extras}


def _data_url(url: str, param: str) -> tuple[str, str]:
    match = _DATA_URL.match(url)
    if match is None:
        raise InvalidRequestError(
            f"Invalid '{param}': expected a base64 data URL (data:<type>;base64,<data>).",
            param=param,
            code="invalid_value",
        )
    return match["mime"].lower(), match["data"]


def _decoded(data: str, param: str) -> bytes:
    if len(data) > MAX_INLINE_BYTES * 4 // 3 + 4:
        raise _too_large(param)
    try:
        decoded = base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        raise InvalidRequestError(
            f"Invalid '{param}': the data is not valid base64.", param=param, code="invalid_value"
        ) from None
    if not decoded:
        raise InvalidRequestError(
            f"Invalid '{param}': the data is empty.", param=param, code="invalid_value"
        )
    if len(decoded) > MAX_INLINE_BYTES:
        raise _too_large(param)
    return decoded


def _too_large(param: str) -> InvalidRequestError:
    return InvalidRequestError(
        f"Invalid '{param}': larger than {MAX_INLINE_BYTES} bytes.",
        param=param,
        code="invalid_value",
    )


def _web_url(url: str, param: str) -> str:
    if not re.match(r"^https?://[^\s/]+", url) or len(url) > MAX_URL_CHARS:
        raise InvalidRequestError(
            f"Invalid '{param}': expected an http(s) URL or a base64 data URL.",
            param=param,
            code="invalid_value",
        )
    return url
