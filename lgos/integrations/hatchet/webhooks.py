"""Completion webhooks on Hatchet: each delivery (one event for one endpoint) is a run of one
Hatchet task, and each attempt an attempt of that run. The task raises when an attempt gets no
2xx, and Hatchet tries it again after its exponential back-off (`backoff_factor` 2, bounded by
`LGOS_WEBHOOK_MAX_DELAY_SECONDS`), on any worker, until `LGOS_WEBHOOK_MAX_ATTEMPTS`: the event
survives the death of the worker that was delivering it, and keeps its id on every attempt.

The worker that finished a run triggers its deliveries, and the API that cancelled one; the
trigger's idempotency key is the delivery's (event id and endpoint), so a run executed again
triggers nothing new. Hatchet's view of the task's runs (dashboard, REST) is the operator's
record of each delivery, beside the log record of each attempt.
"""

from __future__ import annotations

import asyncio
import hashlib
import logging
from dataclasses import dataclass
from datetime import timedelta
from typing import Any

from hatchet_sdk import Context, Hatchet, IdempotencyCollisionError, TTLBasedIdempotencyConfig
from hatchet_sdk.runnables.workflow import Standalone
from pydantic import BaseModel, ConfigDict

from lgos.background import webhooks
from lgos.core.background import BackgroundJob
from lgos.core.webhooks import Delivery, WebhookSettings

logger = logging.getLogger("lgos.webhooks")

WEBHOOK_TASK_NAME = "lgos-webhook-delivery"
# A delivery is triggered once per event and endpoint while its key lives (a run executed
# again within this time triggers nothing new).
IDEMPOTENCY_TTL = timedelta(days=3)
TRIGGER_TIMEOUT_SECONDS = 30.0


class WebhookTaskInput(BaseModel):
    model_config = ConfigDict(extra="ignore")

    delivery: dict[str, Any]  # a `Delivery` as JSON (no secret: each worker has its settings)
    key: str


class WebhookAttemptFailedError(Exception):
    """This attempt got no 2xx: Hatchet tries the delivery again after its back-off."""


def create_webhook_task(
    hatchet: Hatchet, settings: WebhookSettings | None
) -> Standalone[WebhookTaskInput, dict[str, Any]]:
    """The delivery task both sides declare: the API and workers trigger it, workers run it
    (with their settings, which hold the secrets)."""
    bounds = settings or WebhookSettings()

    @hatchet.task(
        name=WEBHOOK_TASK_NAME,
        input_validator=WebhookTaskInput,
        retries=bounds.max_attempts - 1,
        backoff_factor=2.0,
        backoff_max_seconds=max(1, int(bounds.max_delay_seconds)),
        execution_timeout=timedelta(seconds=bounds.timeout_seconds + 30),
        schedule_timeout=timedelta(days=1),
        idempotency=TTLBasedIdempotencyConfig(key_expression="input.key", ttl=IDEMPOTENCY_TTL),
    )
    async def deliver_webhook(task_input: WebhookTaskInput, ctx: Context) -> dict[str, Any]:
        delivery = Delivery.model_validate(task_input.delivery)
        number = ctx.attempt_number
        if await webhooks.attempt(settings, delivery, number):
            webhooks.logged_end(delivery, number, delivered=True)
            return {"delivered": True, "attempts": number}
        if number >= bounds.max_attempts:
            webhooks.logged_end(delivery, number, delivered=False)
            return {"delivered": False, "attempts": number}
        raise WebhookAttemptFailedError(f"attempt {number} of {delivery.event.id} got no 2xx")

    return deliver_webhook


@dataclass(frozen=True, slots=True)
class WebhookTrigger:
    """Triggers the deliveries of a run that ended. Never raises: a delivery that could not
    be triggered is logged, and the run's own result stands."""

    task: Standalone[WebhookTaskInput, dict[str, Any]]
    settings: WebhookSettings

    async def ended(self, response: dict[str, Any]) -> None:
        await self._trigger(webhooks.for_end(self.settings, str(response["id"]), response))

    async def cancelled(self, job: BackgroundJob, engine_run_id: str) -> None:
        await self._trigger(webhooks.for_cancelled(self.settings, job, engine_run_id))

    async def _trigger(self, deliveries: list[Delivery]) -> None:
        for delivery in deliveries:
            endpoint = hashlib.sha256(delivery.url.encode()).hexdigest()[:12]
            task_input = WebhookTaskInput(
                delivery=delivery.model_dump(mode="json"), key=f"{delivery.event.id}-{endpoint}"
            )
            try:
                await asyncio.wait_for(
                    self.task.aio_run(task_input, wait_for_result=False), TRIGGER_TIMEOUT_SECONDS
                )
            except IdempotencyCollisionError:
                continue  # triggered already (this run was executed before)
            except Exception as error:
                logger.error(
                    "webhook.not_triggered",
                    extra={
                        "webhook_id": delivery.event.id,
                        "response_id": delivery.event.data.id,
                        "error.type": type(error).__qualname__,
                    },
                )


def webhook_trigger(hatchet: Hatchet, settings: WebhookSettings | None) -> WebhookTrigger | None:
    if settings is None:
        return None
    return WebhookTrigger(create_webhook_task(hatchet, settings), settings)
