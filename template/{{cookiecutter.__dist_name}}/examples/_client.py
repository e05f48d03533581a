"""The OpenAI client every example uses: the service at OPENAI_BASE_URL (default: `just run`)."""

from __future__ import annotations

import os

from openai import OpenAI


def client() -> OpenAI:
    return OpenAI(
        base_url=os.environ.get("OPENAI_BASE_URL", "http://127.0.0.1:8000/v1"),
        # The service has no authentication of its own; put a gateway in front for that.
        api_key=os.environ.get("OPENAI_API_KEY", "unused"),
    )
