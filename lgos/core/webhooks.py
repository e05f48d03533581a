"""Completion webhooks of background Responses: the endpoints an operator configures, the
events (OpenAI's shape, `openai.types.webhooks`) and their Standard Webhooks signature.

Nothing here sends anything (`lgos.service.webhooks` does); this is the contract every
engine shares: which events a finished run produces, what their ids are, how they are signed.

Event ids are derived from the Response id and the event type, so every execution that sees a
run end (a worker that ran it, the one that recovered it, the API that cancelled it) builds
the same event: an engine that starts one delivery per event id delivers it once, and a
receiver that deduplicates by `webhook-id` sees it once.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, HttpUrl, field_validator

# OpenAI's events of a background Response's end, and LGOS's own for a pause (a Response that
# completed with `lgos_interrupt` calls: it waits for a human). The pause is an extension:
# OpenAI's SDK verifies it like any other event, and receivers that know only OpenAI's types
# never get it unless they ask for it (it is not among the default types).
WebhookEventType = Literal[
    "response.completed",
    "response.failed",
    "response.cancelled",
    "response.incomplete",
    "lgos.response.paused",
]
OPENAI_EVENT_TYPES: tuple[WebhookEventType, ...] = (
    "response.completed",
    "response.failed",
    "response.cancelled",
    "response.incomplete",
)
PAUSED_EVENT_TYPE: WebhookEventType = "lgos.response.paused"
_EVENT_FOR_STATUS: Mapping[str, WebhookEventType] = {
    "completed": "response.completed",
    "failed": "response.failed",
    "cancelled": "response.cancelled",
    "incomplete": "response.incomplete",
}
# The function name of an interrupt call (lgos.wire.interrupts; not imported: core knows no
# wire module, and this name is part of the public contract).
_INTERRUPT_CALL = "lgos_interrupt"
SECRET_PREFIX = "whsec_"


class WebhookEndpoint(BaseModel):
    """One receiver: where events go, the secret that signs them, and which types it wants."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    url: HttpUrl
    # `whsec_` + base64 of the key bytes, the form OpenAI shows and its SDK's `unwrap` takes.
    secret: str = Field(repr=False)
    events: tuple[WebhookEventType, ...] = OPENAI_EVENT_TYPES

    @field_validator("secret")
    @classmethod
    def _whsec(cls, value: str) -> str:
        if not value.startswith(SECRET_PREFIX):
            raise ValueError(f"must start with {SECRET_PREFIX!r} (then base64 of the key)")
        try:
            key = base64.b64decode(value.removeprefix(SECRET_PREFIX), validate=True)
        except binascii.Error:
            raise ValueError("must be 'whsec_' followed by base64") from None
        if len(key) < 16:
            raise ValueError("the key must be at least 16 bytes (24 base64 characters)")
        return value

    @property
    def key(self) -> bytes:
        return base64.b64decode(self.secret.removeprefix(SECRET_PREFIX))


class WebhookSettings(BaseModel):
    """What the engines need to deliver: the endpoints and the bounds of the retries."""

    model_config = ConfigDict(frozen=True)

    endpoints: tuple[WebhookEndpoint, ...] = ()
    # Attempts per event and endpoint, the first included; then the event is given up (logged).
    max_attempts: int = Field(default=12, ge=1)
    # The pause after the first failed attempt; it doubles after each failure up to the bound.
    first_delay_seconds: float = Field(default=1.0, gt=0)
    max_delay_seconds: float = Field(default=600.0, gt=0)
    # One attempt waits this long for the receiver's answer.
    timeout_seconds: float = Field(default=10.0, gt=0)

    def delay(self, failures: int) -> float:
        """The pause after the `failures`-th failed attempt (1, 2, ...)."""
        return float(min(self.first_delay_seconds * 2 ** (failures - 1), self.max_delay_seconds))

    def endpoint(self, url: str) -> WebhookEndpoint | None:
        for endpoint in self.endpoints:
            if str(endpoint.url) == url:
                return endpoint
        return None


class WebhookEventData(BaseModel):
    model_config = ConfigDict(frozen=True)

    id: str


class WebhookEvent(BaseModel):
    """One event as OpenAI sends it (`openai.types.webhooks.ResponseCompletedWebhookEvent` and
    its siblings): `id`, `type`, `created_at`, `data.id`, `object`."""

    model_config = ConfigDict(frozen=True)

    id: str
    type: WebhookEventType
    created_at: int
    data: WebhookEventData
    object: Literal["event"] = "event"

    def body(self) -> str:
        """The request body: compact JSON, signed exactly as sent."""
        return json.dumps(self.model_dump(mode="json"), separators=(",", ":"))


class Delivery(BaseModel):
    """One event for one endpoint: what an engine keeps durably until a 2xx. The secret is not
    in it (it stays in the settings of each process); the endpoint is named by its URL."""

    model_config = ConfigDict(frozen=True)

    url: str
    event: WebhookEvent


def event_types(response: Mapping[str, Any]) -> list[WebhookEventType]:
    """The events a background Response's end produces: its status's, and a pause's when it
    completed waiting on interrupt answers. Not final (queued, in progress): none."""
    kind = _EVENT_FOR_STATUS.get(str(response.get("status")))
    if kind is None:
        return []
    types = [kind]
    output = response.get("output") or []
    if kind == "response.completed" and any(
        isinstance(item, Mapping)
        and item.get("type") == "function_call"
        and item.get("name") == _INTERRUPT_CALL
        for item in output
    ):
        types.append(PAUSED_EVENT_TYPE)
    return types


def event_id(response_id: str, kind: WebhookEventType) -> str:
    """The same for every observer of the same end (see the module docstring)."""
    return "evt_" + hashlib.sha256(f"{response_id}\0{kind}".encode()).hexdigest()[:32]


def deliveries(
    settings: WebhookSettings | None,
    response_id: str,
    types: Sequence[WebhookEventType],
    created_at: int,
) -> list[Delivery]:
    """Every (endpoint, event) the end of this Response must be delivered as."""
    if settings is None:
        return []
    found = []
    for kind in types:
        event = WebhookEvent(
            id=event_id(response_id, kind),
            type=kind,
            created_at=created_at,
            data=WebhookEventData(id=response_id),
        )
        for endpoint in settings.endpoints:
            if kind in endpoint.events:
                found.append(Delivery(url=str(endpoint.url), event=event))
    return found


def signature(key: bytes, message_id: str, timestamp: int, body: str) -> str:
    """Standard Webhooks `v1` signature: HMAC-SHA256 of `id.timestamp.body`, base64."""
    signed = f"{message_id}.{timestamp}.{body}".encode()
    return "v1," + base64.b64encode(hmac.new(key, signed, hashlib.sha256).digest()).decode()


def signed_headers(
    endpoint: WebhookEndpoint, event: WebhookEvent, body: str, timestamp: int
) -> dict[str, str]:
    """The headers of one attempt. `webhook-id` is the event id on every attempt (receivers
    deduplicate by it); the timestamp is the attempt's, as receivers refuse old ones."""
    return {
        "content-type": "application/json",
        "webhook-id": event.id,
        "webhook-timestamp": str(timestamp),
        "webhook-signature": signature(endpoint.key, event.id, timestamp, body),
    }
