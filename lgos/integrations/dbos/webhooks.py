"""Completion webhooks on DBOS: each delivery (one event for one endpoint) is a workflow of its
own, whose attempts are steps and whose pauses are durable sleeps, so a worker that dies
mid-delivery is continued by another (or by its restart) with the same event and webhook-id.

The workflow id is derived from the event id and the endpoint: the worker that finished the
run and the API that cancelled one enqueue it, a recovered run enqueues it again, and DBOS
keeps the first (an id already taken is not started twice). The workflow's status and output
(`{"delivered", "attempts"}`) in `dbos.workflow_status` are the operator's record of it,
beside the log record of each attempt.
"""

from __future__ import annotations

import hashlib
from typing import Any

from dbos import DBOS, DBOSClient, EnqueueOptions, WorkflowSerializationFormat

from lgos.background import webhooks
from lgos.core.webhooks import Delivery, WebhookSettings
from lgos.integrations.dbos.names import (
    APPLICATION_NAME,
    APPLICATION_VERSION,
    WEBHOOK_QUEUE_NAME,
    WEBHOOK_STEP_NAME,
    WEBHOOK_WORKFLOW_NAME,
)


def workflow_id(delivery: Delivery) -> str:
    endpoint = hashlib.sha256(delivery.url.encode()).hexdigest()[:12]
    return f"webhook-{delivery.event.id}-{endpoint}"


def options(delivery: Delivery) -> EnqueueOptions:
    return {
        "workflow_name": WEBHOOK_WORKFLOW_NAME,
        "queue_name": WEBHOOK_QUEUE_NAME,
        "workflow_id": workflow_id(delivery),
        "app_version": APPLICATION_VERSION,
        "application_name": APPLICATION_NAME,
        "serialization_type": WorkflowSerializationFormat.PORTABLE,
    }


async def enqueue_with_client(client: DBOSClient, deliveries: list[Delivery]) -> None:
    """The API side (a cancelled run): enqueue through the plain-SQL client."""
    for delivery in deliveries:
        await client.enqueue_async(options(delivery), delivery.model_dump(mode="json"))


async def enqueue_in_workflow(deliveries: list[Delivery]) -> None:
    """The worker side, from the run's workflow once its graph has ended."""
    for delivery in deliveries:
        await DBOS.enqueue_workflow_with_options_async(
            options(delivery), delivery.model_dump(mode="json")
        )


class WebhookWorkflow:
    """The delivery workflow of this process, with the settings it signs and retries with
    (set by the worker while it runs; the secret never goes into the database)."""

    def __init__(self) -> None:
        self.settings: WebhookSettings | None = None
        self._registered = False

    def register(self) -> None:
        if self._registered:
            return

        async def _attempt(delivery: dict[str, Any], number: int) -> bool:  # JSON in and out
            return await webhooks.attempt(self.settings, Delivery.model_validate(delivery), number)

        # No step retries: the workflow decides when to try again (and logs each attempt).
        attempt = DBOS.step(name=WEBHOOK_STEP_NAME, retries_allowed=False)(_attempt)

        async def webhook_delivery(delivery: dict[str, Any]) -> dict[str, Any]:  # JSON
            settings = self.settings or WebhookSettings()
            parsed = Delivery.model_validate(delivery)
            for number in range(1, settings.max_attempts + 1):
                if await attempt(delivery, number):
                    webhooks.logged_end(parsed, number, delivered=True)
                    return {"delivered": True, "attempts": number}
                if number < settings.max_attempts:
                    await DBOS.sleep_async(settings.delay(number))
            webhooks.logged_end(parsed, settings.max_attempts, delivered=False)
            return {"delivered": False, "attempts": settings.max_attempts}

        DBOS.workflow(
            name=WEBHOOK_WORKFLOW_NAME,
            serialization_type=WorkflowSerializationFormat.PORTABLE,
        )(webhook_delivery)
        self._registered = True


WEBHOOK_WORKFLOW = WebhookWorkflow()
