# Image for the Chainlit UI. Build context: demo/chainlit (its requirements.txt
# pins the UI's own dependencies; the app never imports lgos).
FROM python:3.11-slim-bookworm

WORKDIR /app
ENV PYTHONUNBUFFERED=1
COPY requirements.txt ./
RUN pip install --no-cache-dir -r requirements.txt
COPY . .
RUN useradd --system --uid 10001 --home-dir /app chainlit && chown -R chainlit /app
USER chainlit

EXPOSE 8000
# CHAINLIT_APP names the app module inside demo/chainlit.
CMD ["sh", "-c", "exec chainlit run \"${CHAINLIT_APP:-app.py}\" --headless --host 0.0.0.0 --port 8000"]
