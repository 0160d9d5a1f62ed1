"""A plain CRUD helpdesk's ticket writes: the baseline of bench/writes.py.

What such a service does for a ticket, and nothing more: one FastAPI app on one asyncpg
pool, one transaction per write that arms the tenant and the actor with
``set_config(..., true)``, writes the row into a table under row-level security
(``FORCE``, the policy on ``tenant_id = current_setting('app.tenant_id')``) where an
``AFTER INSERT`` row trigger writes an audit row naming the actor from
``current_setting('app.actor_id')``, commits, and answers the row as orjson bytes:

- ``POST /v1/tickets``: BEGIN, arm, INSERT the ticket (audited), COMMIT;
- ``POST /v1/tickets/{id}/messages``: BEGIN, arm, INSERT the message (audited; a
  foreign key to its ticket), UPDATE the ticket's ``updated_at``, COMMIT;
- ``GET /v1/tickets?limit=n``: the newest tickets of the tenant, one transaction.

The request bodies are the helpdesk's and are validated by pydantic; one bearer key,
compared in memory (the helpdesk too remembers its keys per process). Its schema lives
in a database of its own, owned by the bench's superuser and used by a role that is
neither superuser nor owner nor BYPASSRLS (``create_database``). It is served as
``helpdesk serve --workers 1`` serves: uvicorn in one process on uvloop, the httptools
protocol, no access log::

    python -m bench.crud_baseline --port 8001

with ``CRUD_DATABASE_URL`` (the runtime role), ``CRUD_TENANT``, ``CRUD_KEY`` and
``DB_POOL_MAX`` (default 10, as the helpdesk's) in the environment.
"""

from __future__ import annotations

import argparse
import asyncio
import hmac
import os
import uuid
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import asyncpg
import orjson
from fastapi import FastAPI, HTTPException, Request, Response
from pydantic import BaseModel, ConfigDict, Field

RUNTIME_ROLE, RUNTIME_PASSWORD = "crud_app", "crud-app-bench"

SCHEMA = """
CREATE TABLE tickets (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    subject text NOT NULL,
    body text NOT NULL,
    status text NOT NULL DEFAULT 'new',
    priority text NOT NULL,
    source text NOT NULL,
    tags text[] NOT NULL DEFAULT '{}',
    requester_email text NOT NULL,
    requester_name text,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);
CREATE INDEX tickets_recent ON tickets (tenant_id, created_at DESC, id DESC);
CREATE INDEX tickets_requester ON tickets (tenant_id, requester_email);

CREATE TABLE messages (
    tenant_id uuid NOT NULL,
    id uuid NOT NULL DEFAULT gen_random_uuid(),
    ticket_id uuid NOT NULL,
    body text NOT NULL,
    author text NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id),
    FOREIGN KEY (tenant_id, ticket_id) REFERENCES tickets (tenant_id, id)
);
CREATE INDEX messages_of_ticket ON messages (tenant_id, ticket_id, created_at);

CREATE TABLE audit (
    tenant_id uuid NOT NULL,
    id bigint GENERATED ALWAYS AS IDENTITY,
    actor text NOT NULL,
    entity text NOT NULL,
    entity_id uuid NOT NULL,
    action text NOT NULL,
    at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, id)
);

-- The actor comes from the transaction's setting; without one (a setting armed by an
-- earlier transaction reads '' afterwards) audit.actor is null and the write fails.
CREATE FUNCTION audit_insert() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO audit (tenant_id, actor, entity, entity_id, action)
    VALUES (NEW.tenant_id, nullif(current_setting('app.actor_id', true), ''), TG_TABLE_NAME,
            NEW.id, TG_OP);
    RETURN NULL;
END $$;
CREATE TRIGGER tickets_audit AFTER INSERT ON tickets
    FOR EACH ROW EXECUTE FUNCTION audit_insert();
CREATE TRIGGER messages_audit AFTER INSERT ON messages
    FOR EACH ROW EXECUTE FUNCTION audit_insert();
"""

# Every table: row-level security the owner is held to as well, failing closed.
TENANT = "tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid"
ISOLATION = "".join(f"""
ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;
ALTER TABLE {table} FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON {table} USING ({TENANT}) WITH CHECK ({TENANT});
""" for table in ("tickets", "messages", "audit"))

ROLE = f"""
DO $$
BEGIN
    IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = '{RUNTIME_ROLE}') THEN
        CREATE ROLE {RUNTIME_ROLE} LOGIN NOSUPERUSER NOBYPASSRLS PASSWORD '{RUNTIME_PASSWORD}';
    END IF;
END $$;
"""

GRANTS = f"""
GRANT SELECT, INSERT, UPDATE ON tickets, messages TO {RUNTIME_ROLE};
GRANT INSERT ON audit TO {RUNTIME_ROLE};
"""

# $1 tenant, $2 count: tickets as POST /v1/tickets writes them, a second apart.
SEED = """
INSERT INTO tickets (tenant_id, subject, body, priority, source, tags, requester_email,
                     created_at, updated_at)
SELECT $1, 'bench ' || i, 'b', 'normal', 'email', '{}', 'bench@example.com',
       now() - make_interval(secs => $2 - i), now() - make_interval(secs => $2 - i)
  FROM generate_series(1, $2) AS i
RETURNING id
"""

ARM = ("SELECT set_config('app.tenant_id', $1, true), "
       "set_config('app.actor_id', $2, true)")

TICKET_COLUMNS = ("id, subject, status, priority, source, tags, requester_email, "
                  "requester_name, created_at, updated_at")

# $1 tenant, $2 subject, $3 body, $4 priority, $5 source, $6 tags, $7 e-mail, $8 name
INSERT_TICKET = f"""
INSERT INTO tickets (tenant_id, subject, body, priority, source, tags, requester_email,
                     requester_name)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
RETURNING {TICKET_COLUMNS}
"""

# $1 tenant, $2 ticket, $3 body, $4 author
INSERT_MESSAGE = """
INSERT INTO messages (tenant_id, ticket_id, body, author) VALUES ($1, $2, $3, $4)
RETURNING id, ticket_id, body, author, created_at
"""

# $1 tenant, $2 ticket, $3 the message's time
TOUCH_TICKET = "UPDATE tickets SET updated_at = $3 WHERE tenant_id = $1 AND id = $2"

# $1 limit
RECENT = f"SELECT {TICKET_COLUMNS} FROM tickets ORDER BY created_at DESC, id DESC LIMIT $1"


async def create_database(server_url: str, tenant: uuid.UUID,
                          tickets: int) -> tuple[str, list[str]]:
    """Make the baseline's database on ``server_url`` (a superuser URL) with ``tickets``
    tickets of ``tenant``; returns the runtime role's URL and the tickets' ids."""
    from tests.support.pg import with_database

    name = f"crud_{uuid.uuid4().hex[:8]}"
    admin = await asyncpg.connect(server_url)
    try:
        await admin.execute(ROLE)
        await admin.execute(f'CREATE DATABASE "{name}"')
    finally:
        await admin.close()
    admin = await asyncpg.connect(with_database(server_url, name))
    try:
        await admin.execute(SCHEMA + ISOLATION + GRANTS)
        async with admin.transaction():
            await admin.execute(ARM, str(tenant), "seed")
            ids = [str(r["id"]) for r in await admin.fetch(SEED, tenant, tickets)]
        await admin.execute("ANALYZE")
    finally:
        await admin.close()
    return with_database(server_url, name, user=RUNTIME_ROLE, password=RUNTIME_PASSWORD), ids


class RequesterIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    email: str = Field(min_length=3, max_length=320)
    name: str | None = Field(default=None, max_length=200)


class TicketIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    subject: str = Field(min_length=1, max_length=500)
    body: str = Field(min_length=1, max_length=100_000)
    requester: RequesterIn
    priority: str = "normal"
    source: str = "api"
    tags: list[str] = Field(default_factory=list, max_length=50)


class MessageIn(BaseModel):
    model_config = ConfigDict(extra="forbid")
    body: str = Field(min_length=1, max_length=100_000)


def _ticket(row: asyncpg.Record) -> dict[str, Any]:
    return {"id": row["id"], "subject": row["subject"], "status": row["status"],
            "priority": row["priority"], "source": row["source"], "tags": row["tags"],
            "requester": {"email": row["requester_email"], "name": row["requester_name"]},
            "created_at": row["created_at"], "updated_at": row["updated_at"]}


def _json(document: Any, status: int = 200) -> Response:
    # default=str: asyncpg's own UUID type, which orjson does not take for a uuid.UUID.
    return Response(orjson.dumps(document, default=str), status_code=status,
                    media_type="application/json")


def create_app() -> FastAPI:
    dsn, tenant, key = (os.environ[k] for k in ("CRUD_DATABASE_URL", "CRUD_TENANT", "CRUD_KEY"))
    pool_max = int(os.environ.get("DB_POOL_MAX", "10"))
    expected = f"Bearer {key}".encode()

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[dict[str, Any]]:
        pool = await asyncpg.create_pool(dsn, min_size=2, max_size=pool_max)
        try:
            yield {"pool": pool}
        finally:
            await pool.close()

    app = FastAPI(lifespan=lifespan)

    def actor(request: Request) -> str:
        if not hmac.compare_digest(request.headers.get("authorization", "").encode(), expected):
            raise HTTPException(401)
        return "api_key:bench"

    @app.get("/health/live")
    async def live() -> Response:
        return _json({"status": "ok"})

    @app.post("/v1/tickets", status_code=201)
    async def create(body: TicketIn, request: Request) -> Response:
        who = actor(request)
        async with request.state.pool.acquire() as conn, conn.transaction():
            await conn.execute(ARM, tenant, who)
            row = await conn.fetchrow(INSERT_TICKET, uuid.UUID(tenant), body.subject,
                                      body.body, body.priority, body.source, body.tags,
                                      body.requester.email, body.requester.name)
        return _json(_ticket(row), 201)

    @app.post("/v1/tickets/{ticket_id}/messages", status_code=201)
    async def reply(ticket_id: uuid.UUID, body: MessageIn, request: Request) -> Response:
        who = actor(request)
        try:
            async with request.state.pool.acquire() as conn, conn.transaction():
                await conn.execute(ARM, tenant, who)
                row = await conn.fetchrow(INSERT_MESSAGE, uuid.UUID(tenant), ticket_id,
                                          body.body, who)
                await conn.execute(TOUCH_TICKET, uuid.UUID(tenant), ticket_id,
                                   row["created_at"])
        except asyncpg.ForeignKeyViolationError:
            raise HTTPException(404) from None
        return _json(dict(row), 201)

    @app.get("/v1/tickets")
    async def recent(request: Request, limit: int = 25) -> Response:
        who = actor(request)
        async with request.state.pool.acquire() as conn, conn.transaction():
            await conn.execute(ARM, tenant, who)
            rows = await conn.fetch(RECENT, limit)
        return _json({"data": [_ticket(r) for r in rows], "next_cursor": None})

    return app


def main() -> None:
    import uvicorn
    import uvloop

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8001)
    args = parser.parse_args()
    config = uvicorn.Config(create_app(), host=args.host, port=args.port, log_config=None,
                            log_level="warning", access_log=False, lifespan="on",
                            http="httptools")
    with asyncio.Runner(loop_factory=uvloop.new_event_loop) as runner:
        runner.run(uvicorn.Server(config).serve())


if __name__ == "__main__":
    main()
