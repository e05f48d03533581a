"""The one JSON renderer of every LGOS reply."""

from __future__ import annotations

from typing import Any

from pydantic_core import to_json
from starlette.responses import Response


class JSON(Response):
    """JSON rendered by pydantic-core: faster than the stdlib encoder on large Responses."""

    media_type = "application/json"

    # Any: Starlette's `render` takes whatever the reply carries (a wire TypedDict, say).
    def render(self, content: Any) -> bytes:
        return to_json(content)
