# Image for the Chainlit UI. Build context: demo/chainlit (its requirements.txt
# pins the UI's own dependencies; the app never imports lgos).
# compose.yaml passes DEMO_PYTHON_IMAGE here (a mirror or a stand-in of the same image).
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
FROM ${PYTHON_IMAGE}

WORKDIR /app
ENV PYTHONUNBUFFERED=1
COPY requirements.txt ./
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
# The files volume (compose: chainlit-files) takes the owner of this folder when first created:
# without it the volume is root's and every element the app stores (a review card) fails.
RUN mkdir -p /app/.files && useradd --system --uid 10001 --home-dir /app chainlit && chown -R chainlit /app
USER chainlit

EXPOSE 8000
# With DATABASE_URL set, create Chainlit's database and schema first
# (setup_db.py is idempotent). CHAINLIT_APP names the app module.
CMD ["sh", "-c", "if [ -n \"${DATABASE_URL:-}\" ]; then python setup_db.py \"$DATABASE_URL\"; fi && exec chainlit run \"${CHAINLIT_APP:-app.py}\" --headless --host 0.0.0.0 --port 8000"]
