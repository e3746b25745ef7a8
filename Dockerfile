# toppref web, worker and beat image.
FROM python:3.11-slim-bookworm

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

RUN apt-get update \
 && apt-get install -y --no-install-recommends libpq5 curl \
 && rm -rf /var/lib/apt/lists/*

RUN useradd --create-home --uid 1000 toppref
WORKDIR /app

# The pinned dependencies first (requirements-runtime.lock, hashes checked: `make lock`), then toppref alone.
COPY requirements-runtime.lock ./
RUN pip install --require-hashes -r requirements-runtime.lock
COPY pyproject.toml README.md ./
COPY config ./config
COPY pools ./pools
COPY judging ./judging
COPY metrics ./metrics
COPY trecio ./trecio
COPY dashboard ./dashboard
RUN pip install --no-deps . && pip check

COPY manage.py ./
COPY templates ./templates
COPY static ./static
COPY demo ./demo

# collectstatic needs some settings; none of these values is used at run time.
RUN DJANGO_ENV=production DJANGO_SECRET_KEY=collectstatic-only DJANGO_ALLOWED_HOSTS=localhost \
    python manage.py collectstatic --noinput

RUN mkdir -p /app/media && chown -R toppref:toppref /app/media
USER toppref

EXPOSE 8000
# gunicorn's sync workers: WEB_CONCURRENCY, 2 x cores + 1 for the 2-core machine toppref is measured on. Its
# timeout is chosen, not gunicorn's default: 30 s for one request, while the planner stops at
# TOPPREF_PLAN_MAX_SECONDS (5 s) and config/gunicorn.py refuses to start unless that is under half of it.
ENV WEB_CONCURRENCY=5 \
    TOPPREF_WEB_TIMEOUT_SECONDS=30 \
    TOPPREF_PLAN_MAX_SECONDS=5
CMD ["gunicorn", "-c", "python:config.gunicorn", "config.wsgi:application"]
