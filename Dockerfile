# The dominoes service: Starlette + uvicorn, with redis-server and PostgreSQL for the embedded defaults
# (set REDIS_URL to use an external Redis, as compose.yaml does).

FROM node:20-bookworm-slim AS client
WORKDIR /src/client_js
COPY client_js/ ./
# Build the browser client when its sources are present; an empty dist otherwise.
RUN if [ -f package.json ]; then \
        npm ci --no-audit --no-fund --loglevel=error && npm run --silent build; \
    fi \
    && mkdir -p dist

FROM python:3.11-slim
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends redis-server postgresql \
    && rm -rf /var/lib/apt/lists/*

WORKDIR /app
COPY pyproject.toml README.md ./
COPY engine/ engine/
COPY server/ server/
RUN pip install --no-cache-dir . \
    && useradd --create-home --uid 10001 dominoes \
    && mkdir -p /data \
    && chown dominoes:dominoes /data
COPY --from=client /src/client_js/dist/ /app/client_js/dist/

ENV HOST=0.0.0.0 \
    PORT=8000 \
    DATA_DIR=/data \
    STATIC_DIR=/app/client_js/dist \
    PYTHONUNBUFFERED=1

USER 10001
VOLUME ["/data"]
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=10s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen('http://127.0.0.1:%s/healthz' % os.environ.get('PORT', '8000'), timeout=2)"]
CMD ["dominoes-server"]
