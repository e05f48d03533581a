"""In-memory OpenTelemetry providers, injected into LGOS (the globals stay untouched)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from fastapi import FastAPI
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from lgos import ServerSettings, create_app
from lgos.run import telemetry
from tests.telemetry.graphs import Steering, registry_factory


@dataclass
class Telemetry:
    tracer_provider: TracerProvider
    spans: InMemorySpanExporter
    metrics: InMemoryMetricReader

    def workflow_spans(self) -> list[ReadableSpan]:
        return [
            span
            for span in self.spans.get_finished_spans()
            if span.name.startswith("invoke_workflow ")
        ]

    def duration_points(self) -> list[HistogramDataPoint]:
        data = self.metrics.get_metrics_data()
        points: list[HistogramDataPoint] = []
        for resource in data.resource_metrics if data else []:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name == telemetry.DURATION_METRIC:
                        points.extend(metric.data.data_points)  # type: ignore[arg-type]
        return points


@pytest.fixture
def otel() -> Iterator[Telemetry]:
    spans = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(spans))
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    telemetry.use_providers(tracer_provider, meter_provider)
    yield Telemetry(tracer_provider, spans, reader)
    telemetry.use_providers()
    tracer_provider.shutdown()
    meter_provider.shutdown()


@pytest.fixture
def steering(otel: Telemetry) -> Steering:
    return Steering(tracer_provider=otel.tracer_provider)


def explicit_settings(**values: Any) -> ServerSettings:
    """Explicit settings, so a developer's LGOS_* variables cannot reach the test."""
    defaults: dict[str, Any] = {
        "POSTGRES_URI": None,
        "BACKGROUND": "memory",
        "CORS_ORIGINS": [],
        "ENABLE_LANGFUSE": False,
        "INTERRUPT_SWEEP_INTERVAL_MINUTES": 0,
    }
    return ServerSettings(**{**defaults, **values})


@pytest.fixture
async def app(steering: Steering) -> AsyncIterator[FastAPI]:
    application = create_app(registry_factory(steering), settings=explicit_settings())
    async with application.router.lifespan_context(application):
        yield application
