# The helpdesk service: API (`helpdesk serve`), worker (`helpdesk worker`) and
# operator commands, on a slim Python base, running as an unprivileged user.
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 \
    PYTHONUNBUFFERED=1 \
    PIP_NO_CACHE_DIR=1 \
    PIP_DISABLE_PIP_VERSION_CHECK=1

WORKDIR /app

# Dependencies in their own layer: rebuilt only when the pins change.
COPY pyproject.toml constraints.txt ./
RUN python -c "import tomllib; print('\n'.join(tomllib.load(open('pyproject.toml', 'rb'))['project']['dependencies']))" > /tmp/requirements.txt \
 && pip install -c constraints.txt -r /tmp/requirements.txt \
 && rm /tmp/requirements.txt

COPY README.md ./
COPY domain ./domain
COPY eventstore ./eventstore
COPY projections ./projections
COPY scheduler ./scheduler
COPY handlers ./handlers
COPY api ./api
COPY migrations ./migrations
COPY client ./client
RUN pip install --no-deps . \
 && useradd --system --uid 10001 --home-dir /app helpdesk

USER helpdesk
EXPOSE 8000
CMD ["helpdesk", "serve", "--host", "0.0.0.0", "--port", "8000"]
