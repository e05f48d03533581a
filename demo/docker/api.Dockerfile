# Image for the LGOS API (`lgos serve`), the background worker (`lgos worker`)
# and the one-shot migration job of compose.yaml. Build context: the repo root.
# compose.yaml passes DEMO_PYTHON_IMAGE here (a mirror or a stand-in of the same image).
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
FROM ${PYTHON_IMAGE}

# uv from PyPI (pinned like the machines that develop this repo use it).
RUN pip install --no-cache-dir uv==0.13.9

WORKDIR /app
ENV UV_COMPILE_BYTECODE=1 \
    UV_LINK_MODE=copy \
    UV_PROJECT_ENVIRONMENT=/opt/venv \
    PATH=/opt/venv/bin:$PATH \
    PYTHONUNBUFFERED=1

# Dependencies first (cached while only source files change), from the lockfile,
# with every engine the stack can select (PostgreSQL, DBOS and Hatchet) and the MCP and
# A2A endpoints (Open WebUI's tool server and LiteLLM's MCP and agent gateways reach them).
COPY pyproject.toml uv.lock README.md ./
RUN uv sync --frozen --no-dev --no-install-project \
        --extra postgres --extra dbos --extra hatchet --extra mcp --extra a2a

# OpenTelemetry auto-instrumentation for the `otel` profile; used only when
# OTEL_EXPORTER_OTLP_ENDPOINT is set (see entrypoint.sh). Versions match the
# opentelemetry-api of uv.lock.
RUN uv pip install --python /opt/venv/bin/python \
        opentelemetry-distro==0.66b2 opentelemetry-exporter-otlp-proto-http==1.45.2

COPY lgos ./lgos
COPY demo ./demo
# --inexact: a plain sync removes what the lockfile does not list, which would
# take the OpenTelemetry packages above (and `opentelemetry-instrument`) away.
RUN uv sync --frozen --no-dev --inexact --extra postgres --extra dbos --extra hatchet \
        --extra mcp --extra a2a \
    && opentelemetry-instrument --version

COPY demo/docker/entrypoint.sh /usr/local/bin/lgos-entrypoint
RUN chmod 0755 /usr/local/bin/lgos-entrypoint \
    && useradd --system --uid 10001 --home-dir /app lgos
USER lgos

EXPOSE 8000
ENTRYPOINT ["lgos-entrypoint"]
CMD ["lgos", "serve", "demo.registry:create_registry", "--host", "0.0.0.0", "--port", "8000"]
