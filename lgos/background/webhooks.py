"""Sending completion webhooks: one signed attempt, and the retry loop around attempts.

The engines decide where a delivery lives (a task of the API process, a DBOS workflow): they
call `attempt` once per try, with the delay of `WebhookSettings.delay` between tries, so every
engine logs the same record per attempt (`webhook.attempt`, `webhook.delivered`,
`webhook.given_up`) and ends on the same rule: a 2xx ends it, anything else is tried again
until `max_attempts`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import Any

from lgos.core.background import BackgroundJob
from lgos.core.webhooks import Delivery, WebhookSettings, deliveries, event_types, signed_headers
from lgos.wire import ids

logger = logging.getLogger("lgos.webhooks")


async def attempt(settings: WebhookSettings | None, delivery: Delivery, number: int) -> bool:
    """POST the event once, signed now; True on a 2xx. Never raises for the receiver's sake:
    a refused connection, a timeout or a 500 is a failed attempt, logged."""
    import httpx  # the `webhooks` extra; imported only where an endpoint is configured

    fields: dict[str, object] = {  # the records' extras
        "webhook_id": delivery.event.id,
        "webhook_type": delivery.event.type,
        "webhook_url": delivery.url,
        "response_id": delivery.event.data.id,
        "attempt": number,
    }
    endpoint = settings.endpoint(delivery.url) if settings is not None else None
    if settings is None or endpoint is None:
        # Removed from this process's settings since the event was queued: nothing to sign
        # with, and the operator no longer wants it; the delivery ends here.
        logger.warning("webhook.endpoint_gone", extra=fields)
        return True
    body = delivery.event.body()
    headers = signed_headers(endpoint, delivery.event, body, int(time.time()))
    try:
        async with httpx.AsyncClient(timeout=settings.timeout_seconds) as client:
            answer = await client.post(delivery.url, content=body, headers=headers)
    except httpx.HTTPError as error:
        logger.warning("webhook.attempt", extra={**fields, "error.type": type(error).__name__})
        return False
    delivered = 200 <= answer.status_code < 300
    logger.log(
        logging.INFO if delivered else logging.WARNING,
        "webhook.attempt",
        extra={**fields, "http.response.status_code": answer.status_code},
    )
    return delivered


async def deliver(settings: WebhookSettings, delivery: Delivery) -> bool:
    """Attempts with exponential back-off until a 2xx or `max_attempts`: the in-process loop
    (the in-memory engine; it dies with its process)."""
    for number in range(1, settings.max_attempts + 1):
        if await attempt(settings, delivery, number):
            logged_end(delivery, number, delivered=True)
            return True
        if number < settings.max_attempts:
            await asyncio.sleep(settings.delay(number))
    logged_end(delivery, settings.max_attempts, delivered=False)
    return False


def logged_end(delivery: Delivery, attempts: int, *, delivered: bool) -> None:
    fields = {
        "webhook_id": delivery.event.id,
        "webhook_type": delivery.event.type,
        "webhook_url": delivery.url,
        "response_id": delivery.event.data.id,
        "attempts": attempts,
    }
    if delivered:
        logger.info("webhook.delivered", extra=fields)
    else:
        logger.error("webhook.given_up", extra=fields)


def for_cancelled(
    settings: WebhookSettings | None, job: BackgroundJob, engine_run_id: str
) -> list[Delivery]:
    """The deliveries of a run its cancel ended (it has no Response of its own to read)."""
    response_id = str(ids.RunResponseId(job.run_id, engine_run_id))
    return for_end(settings, response_id, None, cancelled=True)


def for_end(
    settings: WebhookSettings | None,
    response_id: str,
    response: Mapping[str, Any] | None,
    *,
    cancelled: bool = False,
) -> list[Delivery]:
    """The deliveries of a background run that just ended: from its final Response, or (a run
    cancelled before it had one) a `response.cancelled` event."""
    if settings is None or not settings.endpoints:
        return []
    now = int(time.time())
    if cancelled:
        return deliveries(settings, response_id, ["response.cancelled"], now)
    if response is None:
        return []
    # OpenAI's `created_at` is when the Response ended; the worker's clock if it says nothing.
    ended = response.get("completed_at")
    created_at = ended if isinstance(ended, int) else now
    return deliveries(settings, response_id, event_types(response), created_at)
