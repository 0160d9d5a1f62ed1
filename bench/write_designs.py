"""The write path's two designs, measured side by side in one run.

(a) What the product does: a unit of work's append goes out in its COMMIT's message
    (eventstore/pool.py ``StoreConnection.commit_with``), and the insert trigger
    assigns ``seq`` and the sha256 chain under the tenant head row lock, held to
    commit (WAL flush included). Driven exactly as commands append:
    ``EventStore(pool).unit_of_work(tenant, actor)``, then ``session.append`` of one event.

(b) A prototype of sequencing after commit, living only in this bench's scratch
    database (schema ``proto``, created below; nothing in the product):

    - ``proto.log``: unsequenced events. An append takes the stream's advisory lock
      (as the product's ``append_events`` does), checks the stream's version and
      inserts: no tenant lock. Sent the same way as (a), in the COMMIT's message.
    - ``proto.sequence(tenants, limit)``: for each tenant whose per-tenant advisory
      lock it gets (``pg_try_advisory_xact_lock``; a busy tenant is reported and
      retried by the caller), moves up to ``limit`` committed log rows, in id order,
      into the insert-only ``proto.events`` with ``seq = head + 1..`` and the
      product's chain (``event_canonical``), deletes them from the log and advances
      ``proto.heads``, all in one transaction, so the lock is held to commit and a
      tenant's sequenced rows commit in ``seq`` order.
    - Moved rows are deleted, not marked. Marking is an UPDATE per event (a whole new
      heap tuple in the table and the WAL, more than a delete writes), keeps every
      event twice for good, and needs a partial index of unmarked rows that each
      mark changes. Deleting keeps
      the log as small as the backlog, at the price of dead tuples for vacuum, and
      of version checks (and any read of a stream not yet sequenced) reading both
      tables: the log's unique key alone no longer covers a stream's history, so the
      stream lock plus a one-statement check over both tables enforce versions, and
      the sequenced table's unique key is only a backstop.

    How (b) is driven: the appending process triggers the sequencer right after its
    commit, in a separate transaction, coalesced like the commit notifier
    (eventstore/notifier.py): one sequencer task per process, which names every
    tenant that committed since its last call in one ``proto.sequence`` call, and
    calls again while more commits arrived meanwhile; it then sends the
    ``helpdesk_events`` notice the feed needs. A loop in another process woken by
    notifications would add a notification hop before sequencing (and another after)
    and need that process to be up; triggering in the appender's own process needs
    no extra process and is the shortest path from commit to sequenced. Across
    processes, a tenant busy in another process's sequencer is retried, since the
    holder may have read the log before this process's commit.

Figures, each against (a) in the same run, for 1 tenant (each writer its own stream)
and 100 tenants (each unit of work a new stream in the next tenant), N writers
(default 16): events/s committed; for (b) events/s sequenced during the window and
the backlog left at its end; the client's unit-of-work latency; the time the tenant
lock is held, from the database (for (a) the head lock, as in bench/http.py; for (b)
the sequencer's advisory lock, from acquisition to commit), with the mean WAL sync
time beside it; WAL bytes per event; CPU per event, of the whole server (its
processes' CPU time from /proc, which other work on the machine inflates far less
than it does rates) and of this process; and the feed's added delay in (b), from the
append's commit to its sequencer's commit (commit timestamps; the prototype keeps
the appending transaction's id in ``proto.events.appended_xid`` for this alone).

The four cases take turns in rounds, the order rotating each round, so background
load on a shared machine falls on all alike. After the run, for (b): per tenant,
``seq`` is 1..head with no gap, the log is empty, every counted append was sequenced
exactly once (per-round actor labels; unique (tenant, stream, version)), and the
chain verifies (the product's verify_chain query on ``proto.events``). For (a):
every counted append is stored and every chain verifies.

    source scripts/_venv.sh bench
    PYTHONPATH=. .venv/bin/python -m bench.write_designs [--seconds 20] [--rounds 5]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path

import asyncpg

from bench.common import private_server, report
from domain.ids import TenantId
from eventstore.literal import append_call
from eventstore.pool import create_pool
from eventstore.sqlfile import load_queries
from eventstore.store import EventStore
from eventstore.types import NewEvent, StoreActor
from handlers.tenants import create_tenant_as_operator
from migrations.runner import OWNER_ROLE, RUNTIME_GROUP

ROOT = Path(__file__).resolve().parents[1]
PAYLOAD = {"subject": "Printer on fire", "priority": "high", "n": 0}
TENANTS = 100
SEQUENCE_LIMIT = 1000  # events per tenant per sequencer call
WARMUP_SECONDS = 1.0

# --- the prototype of (b) ---------------------------------------------------------------

PROTO_SCHEMA = f"""
CREATE SCHEMA proto AUTHORIZATION {OWNER_ROLE};
GRANT USAGE ON SCHEMA proto TO {RUNTIME_GROUP};
SET ROLE {OWNER_ROLE};

-- Unsequenced events: a queue, as small as the sequencer's backlog.
CREATE TABLE proto.log (
    tenant_id       uuid NOT NULL,
    id              bigserial,
    stream_id       uuid NOT NULL,
    version         integer NOT NULL CHECK (version >= 1),
    type            text NOT NULL CHECK (length(type) BETWEEN 1 AND 100),
    schema_version  integer NOT NULL DEFAULT 1 CHECK (schema_version >= 1),
    data            jsonb NOT NULL,
    metadata        jsonb NOT NULL DEFAULT '{{}}',
    actor_kind      text NOT NULL,
    actor_id        text NOT NULL,
    recorded_at     timestamptz NOT NULL,
    PRIMARY KEY (tenant_id, id),
    UNIQUE (tenant_id, stream_id, version)
);
-- It churns like the jobs table: vacuum it as eagerly (migration 0003).
ALTER TABLE proto.log SET (autovacuum_vacuum_scale_factor = 0.01,
                           autovacuum_vacuum_threshold = 1000,
                           autovacuum_analyze_scale_factor = 0.02);

-- The sequenced events: the product's events table, plus appended_xid (the bench's
-- instrument for the feed delay, not part of the design).
CREATE TABLE proto.events (
    tenant_id       uuid NOT NULL,
    seq             bigint NOT NULL,
    stream_id       uuid NOT NULL,
    version         integer NOT NULL CHECK (version >= 1),
    type            text NOT NULL CHECK (length(type) BETWEEN 1 AND 100),
    schema_version  integer NOT NULL DEFAULT 1 CHECK (schema_version >= 1),
    data            jsonb NOT NULL,
    metadata        jsonb NOT NULL DEFAULT '{{}}',
    actor_kind      text NOT NULL,
    actor_id        text NOT NULL,
    recorded_at     timestamptz NOT NULL,
    hash            bytea NOT NULL,
    appended_xid    xid NOT NULL,
    PRIMARY KEY (tenant_id, seq),
    UNIQUE (tenant_id, stream_id, version)
);
CREATE INDEX ON proto.events (tenant_id, type, seq);
CREATE INDEX ON proto.events (tenant_id, recorded_at);
CREATE INDEX ON proto.events (tenant_id, actor_id, seq);
CREATE TRIGGER events_no_update BEFORE UPDATE OR DELETE ON proto.events
    FOR EACH ROW EXECUTE FUNCTION public.events_refuse_change();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON proto.events
    FOR EACH STATEMENT EXECUTE FUNCTION public.events_refuse_change();
-- Webhook deliveries need the seq, so in (b) they are scheduled by the sequencer's
-- insert (the product schedules them in the append: migration 0111). The prototype's
-- sequencer runs it with no tenant armed, so under RLS it finds no webhooks (there
-- are none here anyway); a real (b) would need it to see and write across tenants.
CREATE TRIGGER events_schedule_webhooks AFTER INSERT ON proto.events
    REFERENCING NEW TABLE AS new_events
    FOR EACH STATEMENT EXECUTE FUNCTION public.events_schedule_webhooks();

CREATE TABLE proto.heads (
    tenant_id   uuid PRIMARY KEY,
    seq         bigint NOT NULL DEFAULT 0,
    hash        bytea NOT NULL DEFAULT decode(repeat('00', 32), 'hex')
);

-- Stamps the actor and the time, as the product's trigger does, and takes no lock.
CREATE FUNCTION proto.log_before_insert() RETURNS trigger
LANGUAGE plpgsql
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_tenant uuid := nullif(current_setting('app.tenant_id', true), '')::uuid;
    v_actor_kind text := nullif(current_setting('app.actor_kind', true), '');
    v_actor_id text := nullif(current_setting('app.actor_id', true), '');
BEGIN
    IF v_tenant IS NULL OR NEW.tenant_id IS DISTINCT FROM v_tenant THEN
        RAISE EXCEPTION 'event insert outside its tenant context' USING ERRCODE = '42501';
    END IF;
    IF v_actor_kind IS NULL OR v_actor_id IS NULL THEN
        RAISE EXCEPTION 'event insert with no actor armed' USING ERRCODE = 'HD001';
    END IF;
    NEW.actor_kind := v_actor_kind;
    NEW.actor_id := v_actor_id;
    NEW.recorded_at := clock_timestamp();
    RETURN NEW;
END
$$;
CREATE TRIGGER log_stamp BEFORE INSERT ON proto.log
    FOR EACH ROW EXECUTE FUNCTION proto.log_before_insert();

-- The product's append_events (migration 0004) against the log. The version check
-- reads both tables in one statement, so a row the sequencer moves meanwhile is seen
-- in exactly one of them.
CREATE FUNCTION proto.append_events(
    p_tenant uuid, p_stream uuid, p_expected integer,
    p_types text[], p_schema_versions integer[], p_data jsonb[], p_metadata jsonb[]
) RETURNS SETOF proto.log
LANGUAGE plpgsql VOLATILE
SET search_path = pg_catalog, public
AS $$
DECLARE
    v_current integer;
BEGIN
    PERFORM pg_advisory_xact_lock(hashtextextended(p_tenant::text || '/' || p_stream::text, 0));
    SELECT greatest(
        (SELECT coalesce(max(l.version), 0) FROM proto.log l
          WHERE l.tenant_id = p_tenant AND l.stream_id = p_stream),
        (SELECT coalesce(max(e.version), 0) FROM proto.events e
          WHERE e.tenant_id = p_tenant AND e.stream_id = p_stream))
      INTO v_current;
    IF p_expected IS NOT NULL AND v_current <> p_expected THEN
        RAISE EXCEPTION 'stream % is at version %, not %', p_stream, v_current, p_expected
            USING ERRCODE = 'HD004', DETAIL = v_current::text;
    END IF;
    RETURN QUERY
    INSERT INTO proto.log (tenant_id, stream_id, version, type, schema_version, data, metadata)
    SELECT p_tenant, p_stream, v_current + e.ord, e.type, e.schema_version, e.data,
           coalesce(e.metadata, '{{}}')
      FROM unnest(p_types, p_schema_versions, p_data, p_metadata)
               WITH ORDINALITY AS e(type, schema_version, data, metadata, ord)
     ORDER BY e.ord
    RETURNING *;
END
$$;

-- The sequencer. Runs as the owner (the runtime role may only read the sequenced
-- table); a policy for the owner alone, armed only here, lets it work on several
-- tenants in one statement (tables are under forced RLS), so a call costs a fixed
-- handful of statements plus a loop step per event, however many tenants it names.
-- Try locks, so two sequencers never wait for each other: a busy tenant comes back
-- as busy and its caller tries again. Log rows go in id order, which keeps each
-- stream's versions in order (version v+1 is inserted only after v committed, so it
-- has the larger id); seq order is the sequencer's commit order (the lock is held to
-- commit), which is all a reader tailing seq > n needs. Every tenant a call locks
-- stays locked until the call commits; only other sequencers ever wait for that.
CREATE FUNCTION proto.sequence(p_tenants uuid[], p_limit integer)
RETURNS TABLE (tenant_id uuid, moved integer, busy boolean, locked_at timestamptz,
               xact xid)
LANGUAGE plpgsql VOLATILE SECURITY DEFINER
SET search_path = pg_catalog, public
AS $$
#variable_conflict use_column
DECLARE
    r record;
    v_locked uuid[];
    v_at timestamptz;
    v_tenant uuid;
    v_seq bigint;
    v_hash bytea;
    v_tenants uuid[] := '{{}}';
    v_ids bigint[] := '{{}}';
    v_seqs bigint[] := '{{}}';
    v_hashes bytea[] := '{{}}';
    v_xids xid[] := '{{}}';
    v_xact xid;
BEGIN
    PERFORM set_config('app.sequencer', 'on', true);
    v_locked := ARRAY(
        SELECT u FROM (SELECT DISTINCT u FROM unnest(p_tenants) AS u) AS d
         WHERE pg_try_advisory_xact_lock(hashtextextended('proto.sequencer/' || u::text, 0))
         ORDER BY 1);
    v_at := clock_timestamp();
    RETURN QUERY SELECT DISTINCT u, 0, true, NULL::timestamptz, NULL::xid
                   FROM unnest(p_tenants) AS u WHERE u <> ALL (v_locked);
    FOR r IN SELECT l.tenant_id, l.id, l.lx, l.stream_id, l.version, l.type,
                    l.schema_version, l.data, l.metadata, l.actor_kind, l.actor_id,
                    l.recorded_at, h.seq AS head_seq, h.hash AS head_hash
               FROM unnest(v_locked) AS t(id)
               JOIN proto.heads h ON h.tenant_id = t.id
              CROSS JOIN LATERAL (
                    SELECT q.*, q.xmin AS lx FROM proto.log q WHERE q.tenant_id = t.id
                     ORDER BY q.id LIMIT p_limit) AS l
              ORDER BY l.tenant_id, l.id LOOP
        IF v_tenant IS DISTINCT FROM r.tenant_id THEN
            v_tenant := r.tenant_id;
            v_seq := r.head_seq;
            v_hash := r.head_hash;
        END IF;
        v_seq := v_seq + 1;
        v_hash := sha256(v_hash || event_canonical(
            r.tenant_id, v_seq, r.stream_id, r.version, r.type, r.schema_version,
            r.data, r.metadata, r.actor_kind, r.actor_id, r.recorded_at));
        v_tenants := v_tenants || r.tenant_id;
        v_ids := v_ids || r.id;
        v_seqs := v_seqs || v_seq;
        v_hashes := v_hashes || v_hash;
        v_xids := v_xids || r.lx;
    END LOOP;
    IF cardinality(v_ids) > 0 THEN
        WITH gone AS (
            DELETE FROM proto.log l USING unnest(v_tenants, v_ids) AS x(t, id)
             WHERE l.tenant_id = x.t AND l.id = x.id
            RETURNING l.*
        )
        INSERT INTO proto.events (tenant_id, seq, stream_id, version, type,
                                  schema_version, data, metadata, actor_kind,
                                  actor_id, recorded_at, hash, appended_xid)
        SELECT g.tenant_id, x.s, g.stream_id, g.version, g.type, g.schema_version,
               g.data, g.metadata, g.actor_kind, g.actor_id, g.recorded_at, x.h, x.ax
          FROM unnest(v_tenants, v_ids, v_seqs, v_hashes, v_xids)
                   WITH ORDINALITY AS x(t, id, s, h, ax, o)
          JOIN gone g ON g.tenant_id = x.t AND g.id = x.id
         ORDER BY x.o;
        UPDATE proto.heads h SET seq = x.s, hash = x.h
          FROM (SELECT DISTINCT ON (t) t, s, h
                  FROM unnest(v_tenants, v_seqs, v_hashes) AS u(t, s, h)
                 ORDER BY t, s DESC) AS x
         WHERE h.tenant_id = x.t;
        v_xact := (SELECT h.xmin FROM proto.heads h WHERE h.tenant_id = v_tenants[1]);
    END IF;
    RETURN QUERY SELECT u, (SELECT count(*) FROM unnest(v_tenants) AS m WHERE m = u)::integer,
                        false, v_at, v_xact
                   FROM unnest(v_locked) AS u;
END
$$;

ALTER TABLE proto.log ENABLE ROW LEVEL SECURITY;
ALTER TABLE proto.log FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON proto.log
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
ALTER TABLE proto.events ENABLE ROW LEVEL SECURITY;
ALTER TABLE proto.events FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON proto.events
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);
ALTER TABLE proto.heads ENABLE ROW LEVEL SECURITY;
ALTER TABLE proto.heads FORCE ROW LEVEL SECURITY;
CREATE POLICY tenant_isolation ON proto.heads
    USING (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid)
    WITH CHECK (tenant_id = nullif(current_setting('app.tenant_id', true), '')::uuid);

-- Only the owner's sequencer sees across tenants; the runtime role never does, even
-- if it armed the setting itself.
CREATE POLICY sequencer ON proto.log TO {OWNER_ROLE}
    USING (current_setting('app.sequencer', true) = 'on')
    WITH CHECK (current_setting('app.sequencer', true) = 'on');
CREATE POLICY sequencer ON proto.events TO {OWNER_ROLE}
    USING (current_setting('app.sequencer', true) = 'on')
    WITH CHECK (current_setting('app.sequencer', true) = 'on');
CREATE POLICY sequencer ON proto.heads TO {OWNER_ROLE}
    USING (current_setting('app.sequencer', true) = 'on')
    WITH CHECK (current_setting('app.sequencer', true) = 'on');

GRANT SELECT, INSERT ON proto.log TO {RUNTIME_GROUP};
GRANT USAGE ON SEQUENCE proto.log_id_seq TO {RUNTIME_GROUP};
GRANT SELECT ON proto.events, proto.heads TO {RUNTIME_GROUP};
REVOKE ALL ON FUNCTION proto.sequence(uuid[], integer) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION proto.sequence(uuid[], integer) TO {RUNTIME_GROUP};
RESET ROLE;
INSERT INTO proto.heads (tenant_id) SELECT id FROM tenants;
"""

SEQUENCE = "SELECT tenant_id, moved, busy, locked_at, xact FROM proto.sequence($1, $2)"

_PRODUCT_CALL = "SELECT count(*) FROM append_events("


def proto_append_call(tenant: TenantId, stream: uuid.UUID, version: int,
                      events: Sequence[NewEvent]) -> str:
    """The product's literal append statement (eventstore/literal.py), aimed at the
    prototype's append function instead."""
    sql = append_call(tenant, stream, version, events)
    if not sql.startswith(_PRODUCT_CALL):
        raise SystemExit(f"eventstore.literal.append_call changed shape: {sql[:60]!r}")
    return "SELECT count(*) FROM proto.append_events(" + sql[len(_PRODUCT_CALL):]


@dataclass
class Run:
    """One tenant's share of one sequencer call that moved something."""

    moved: int
    locked_at: datetime
    xid: int


class Sequencer:
    """Design (b)'s sequencer as the appending process would drive it: told of each
    commit, it calls ``proto.sequence`` for every tenant committed since its last
    call, one call at a time, again while more commits arrived meanwhile, and then
    sends the ``helpdesk_events`` notice for what it sequenced."""

    def __init__(self, pool: asyncpg.Pool, store: EventStore) -> None:
        self._pool = pool
        self._notifier = store.notifier
        self._pending: set[TenantId] = set()
        self._task: asyncio.Task[None] | None = None
        self.moved = 0
        self.calls = 0
        self.runs: list[Run] = []

    def committed(self, tenant: TenantId) -> None:
        self._pending.add(tenant)
        if self._task is None or self._task.done():
            self._raise_failure()
            self._task = asyncio.get_running_loop().create_task(self._drain())

    def _raise_failure(self) -> None:
        """A failed sequencer call ends the bench: never measure around a broken design."""
        failure = self._task.exception() if self._task is not None else None
        if failure is not None:
            raise failure

    async def _drain(self) -> None:
        while self._pending:
            batch, self._pending = sorted(self._pending), set()
            async with self._pool.acquire() as conn:
                rows = await conn.fetch(SEQUENCE, batch, SEQUENCE_LIMIT)
            self.calls += 1
            retry = False
            for r in rows:
                if r["busy"]:
                    # Another process's sequencer holds the tenant, and it may have read
                    # the log before our commit: try again shortly.
                    self._pending.add(r["tenant_id"])
                    retry = True
                    continue
                if r["moved"]:
                    self.moved += r["moved"]
                    self.runs.append(Run(r["moved"], r["locked_at"], r["xact"]))
                    self._notifier.committed(r["tenant_id"])
                if r["moved"] == SEQUENCE_LIMIT:
                    self._pending.add(r["tenant_id"])
            if retry:
                await asyncio.sleep(0.001)

    async def idle(self) -> None:
        """Wait until everything committed so far is sequenced."""
        while self._task is not None and not self._task.done():
            await asyncio.shield(self._task)
        self._raise_failure()


# --- one case -------------------------------------------------------------------------------


@dataclass
class Case:
    """The totals of one case (design, tenant count) over all its rounds."""

    count: int = 0
    elapsed: float = 0.0
    latencies: list[float] = field(default_factory=list)  # ms per unit of work
    wal_bytes: int = 0
    wal_events: int = 0  # events whose WAL was counted (including (b)'s drain)
    labels: dict[str, int] = field(default_factory=dict)  # actor label -> appends
    sequenced_in_window: int = 0
    backlog: list[int] = field(default_factory=list)
    drain_ms: list[float] = field(default_factory=list)
    runs: list[Run] = field(default_factory=list)
    calls: int = 0
    server_cpu: float = 0.0  # seconds, the whole server (backends, WAL writer, vacuum)
    client_cpu: float = 0.0  # seconds, this process (writers and (b)'s sequencer)


def server_cpu(postmaster: int) -> float:
    """CPU seconds the server has used so far: its live processes, and those it has
    reaped (counted in the postmaster's cutime and cstime). CPU time, not wall time:
    other work on the machine inflates it far less than it does rates."""
    ticks = 0
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        pid, ppid = int(stat.parent.name), int(fields[1])
        if pid == postmaster:
            ticks += sum(int(f) for f in fields[11:15])  # utime stime cutime cstime
        elif ppid == postmaster:
            ticks += int(fields[11]) + int(fields[12])
    return ticks / os.sysconf("SC_CLK_TCK")


async def run_case(runtime_url: str, admin: asyncpg.Connection, postmaster: int,
                   design: str, tenants: list[TenantId], writers: int, seconds: float,
                   label: str, into: Case) -> None:
    """N writers, each running units of work of one event for ``seconds``."""
    cpu_before, client_before = server_cpu(postmaster), time.process_time()
    pool = await create_pool(runtime_url, min_size=writers + 2, max_size=writers + 2)
    store = EventStore(pool)
    sequencer = Sequencer(pool, store) if design == "b" else None
    actor = StoreActor("api_key", label)
    count = 0
    latencies: list[float] = []
    lsn_before = await admin.fetchval("SELECT pg_current_wal_lsn()")
    deadline = time.perf_counter() + seconds

    async def writer(i: int) -> None:
        nonlocal count
        version, stream, n = 0, uuid.uuid4(), 0
        while time.perf_counter() < deadline:
            tenant = tenants[(i + n * writers) % len(tenants)]
            if len(tenants) > 1:
                stream, version = uuid.uuid4(), 0  # a new stream in the next tenant
            event = [NewEvent("TicketOpened", PAYLOAD)]
            began = time.perf_counter()
            async with store.unit_of_work(tenant, actor) as session:
                if sequencer is None:
                    await session.append(stream, version, event)
                else:
                    # Nothing staged through the session: the prototype's append rides
                    # in the COMMIT's message the same way (eventstore/pool.py).
                    session.conn.commit_with(proto_append_call(tenant, stream, version,
                                                               event))
            if sequencer is not None:
                sequencer.committed(tenant)
            latencies.append((time.perf_counter() - began) * 1000)
            version += 1
            n += 1
            count += 1

    started = time.perf_counter()
    await asyncio.gather(*(writer(i) for i in range(writers)))
    elapsed = time.perf_counter() - started
    if sequencer is not None:
        into.sequenced_in_window += sequencer.moved
        into.backlog.append(count - sequencer.moved)
        began = time.perf_counter()
        await sequencer.idle()
        into.drain_ms.append((time.perf_counter() - began) * 1000)
        into.runs += sequencer.runs
        into.calls += sequencer.calls
    await store.notifier.flush()
    into.wal_bytes += int(await admin.fetchval(
        "SELECT pg_wal_lsn_diff(pg_current_wal_lsn(), $1::pg_lsn)", lsn_before))
    await pool.close()
    await asyncio.sleep(0.2)  # closed backends exit, are reaped and flush their stats
    into.server_cpu += server_cpu(postmaster) - cpu_before
    into.client_cpu += time.process_time() - client_before
    into.count += count
    into.wal_events += count
    into.elapsed += elapsed
    into.latencies += latencies
    into.labels[label] = count


# --- figures from the database -------------------------------------------------------------

# The head lock's hold per transaction, as in bench/http.py (HOLD), per tenant: commit
# timestamp less the later of the first event's recorded_at (set just before the
# trigger takes the head) and the tenant's previous commit. Excludes the WAL flush,
# which the lock also spans.
A_HOLDS = """
WITH tx AS (
    SELECT tenant_id, xmin, min(seq) AS first_seq, min(recorded_at) AS requested,
           pg_xact_commit_timestamp(xmin) AS committed
      FROM events
     WHERE actor_id = ANY ($1::text[])
     GROUP BY tenant_id, xmin
), ordered AS (
    SELECT committed, requested,
           lag(committed) OVER (PARTITION BY tenant_id ORDER BY first_seq) AS previous
      FROM tx
)
SELECT extract(epoch FROM committed - greatest(requested, coalesce(previous, requested)))
       * 1000 AS ms
  FROM ordered
 WHERE previous IS NOT NULL
"""

# The sequencer's lock, from acquisition to its transaction's commit timestamp.
B_HOLDS = """
SELECT extract(epoch FROM pg_xact_commit_timestamp(u.x) - u.l) * 1000 AS ms
  FROM unnest($1::xid[], $2::timestamptz[]) AS u(x, l)
"""

# The feed's added delay: the append's commit to its sequencer's commit.
B_DELAYS = """
SELECT extract(epoch FROM pg_xact_commit_timestamp(xmin)
                          - pg_xact_commit_timestamp(appended_xid)) * 1000 AS ms
  FROM proto.events
 WHERE actor_id = ANY ($1::text[])
"""

WAL_SYNC = "SELECT wal_sync, wal_sync_time FROM pg_stat_wal"


def pct(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * p))]


async def verify(admin: asyncpg.Connection, cases: dict[tuple[str, int], Case]) -> None:
    """(a): every counted append stored, every chain verifies. (b): per tenant, seq is
    1..head with no gap, the log is empty, every counted append was sequenced exactly
    once, and the chain verifies."""
    q = load_queries(ROOT / "eventstore" / "queries.sql")["verify_chain"]
    if q.count("FROM events") != 1:
        raise SystemExit("verify_chain changed shape: cannot aim it at proto.events")
    for table, heads, design in (("events", "tenant_heads", "a"),
                                 ("proto.events", "proto.heads", "b")):
        query = q.replace("FROM events", f"FROM {table}")
        for (d, _), case in cases.items():
            if d != design:
                continue
            for label, expected in case.labels.items():
                stored = await admin.fetchval(
                    f"SELECT count(*) FROM {table} WHERE actor_id = $1", label)
                if stored != expected:
                    raise SystemExit(f"({design}) {label}: counted {expected}, stored {stored}")
        for h in await admin.fetch(f"SELECT tenant_id, seq, hash FROM {heads}"):
            row = await admin.fetchrow(
                f"SELECT count(*) AS n, min(seq) AS lo, max(seq) AS hi FROM {table} "
                "WHERE tenant_id = $1", h["tenant_id"])
            if h["seq"] and (row["n"] != h["seq"] or row["lo"] != 1 or row["hi"] != h["seq"]):
                raise SystemExit(f"({design}) tenant {h['tenant_id']}: {row['n']} events, "
                                 f"seq {row['lo']}..{row['hi']}, head {h['seq']}")
            if h["seq"]:
                chain = await admin.fetchrow(query, h["tenant_id"], 1, h["seq"])
                if (chain["first_bad"] is not None or chain["checked"] != h["seq"]
                        or bytes(chain["last_hash"]) != bytes(h["hash"])):
                    raise SystemExit(f"({design}) tenant {h['tenant_id']}: chain broken at "
                                     f"{chain['first_bad']}")
    left = await admin.fetchval("SELECT count(*) FROM proto.log")
    if left:
        raise SystemExit(f"(b) {left} events left unsequenced in the log")


# --- the run --------------------------------------------------------------------------------


async def run(seconds: float, rounds: int, writers: int) -> None:
    from tests.support.pg import Databases

    config = {"track_commit_timestamp": "on", "track_wal_io_timing": "on",
              "max_connections": "300"}
    with private_server(**config) as server:
        dbs = Databases(server)
        await dbs.create_template()
        db = await dbs.clone()
        try:
            admin = await asyncpg.connect(db.admin_url)
            postmaster = int((Path("/proc") / str(admin.get_server_pid()) / "stat")
                             .read_text().rsplit(")", 1)[1].split()[1])
            began = time.perf_counter()
            one = [(await create_tenant_as_operator(db.admin_url, "bench")).tenant_id]
            many = [(await create_tenant_as_operator(db.admin_url, f"bench {i}")).tenant_id
                    for i in range(TENANTS)]
            await admin.execute(PROTO_SCHEMA)
            print(f"set up in {time.perf_counter() - began:.1f} s; {writers} writers, "
                  f"{rounds} rounds of {seconds / rounds:g} s per case", file=sys.stderr)
            order = [("a", 1), ("b", 1), ("a", TENANTS), ("b", TENANTS)]
            # Unmeasured first: a fresh database's first writes pay for plan caching,
            # function compilation and table growth.
            scratch = Case()
            for design, n in order:
                await run_case(db.runtime_url, admin, postmaster, design,
                               one if n == 1 else many, writers, WARMUP_SECONDS,
                               f"warm-{design}-{n}", scratch)
            await admin.execute("SELECT pg_stat_reset_shared('wal')")
            cases = {key: Case() for key in order}
            wal_sync: dict[str, list[float]] = {"a": [0.0, 0.0], "b": [0.0, 0.0]}
            for turn in range(rounds):
                for design, n in order[turn % 4:] + order[:turn % 4]:
                    before = await admin.fetchrow(WAL_SYNC)
                    await run_case(db.runtime_url, admin, postmaster, design,
                                   one if n == 1 else many, writers, seconds / rounds,
                                   f"{design}-{n}-{turn}", cases[(design, n)])
                    after = await admin.fetchrow(WAL_SYNC)
                    wal_sync[design][0] += after["wal_sync"] - before["wal_sync"]
                    wal_sync[design][1] += after["wal_sync_time"] - before["wal_sync_time"]
            await verify(admin, cases)
            rows = await figures(admin, cases, wal_sync, writers)
            log = await admin.fetchrow(
                "SELECT pg_total_relation_size('proto.log') AS size, n_dead_tup, "
                "autovacuum_count, n_tup_del FROM pg_stat_user_tables "
                "WHERE relid = 'proto.log'::regclass")
            await admin.close()
        finally:
            await dbs.drop(db.name)
            await dbs.drop(dbs.template)
    print(f"(b) log after the run: {log['size'] / 1024:.0f} kB with no live rows, "
          f"{log['n_tup_del']} rows deleted, {log['n_dead_tup']} dead, "
          f"{log['autovacuum_count']} autovacuum run(s)")
    report(f"write designs: (b) sequence after commit vs (a) head lock to commit "
           f"({writers} writers, {rounds} x {seconds / rounds:g} s per case)", rows)


async def figures(admin: asyncpg.Connection, cases: dict[tuple[str, int], Case],
                  wal_sync: dict[str, list[float]], writers: int) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []

    def row(figure: str, value: float, baseline: float | None, digits: int = 2,
            ratio: bool = True) -> None:
        rows.append({"figure": figure, "value": round(value, digits),
                     "baseline": None if baseline is None else round(baseline, digits),
                     "ratio": round(value / baseline, 2) if ratio and baseline else ""})

    sync = {d: (t / n if n else float("nan")) for d, (n, t) in wal_sync.items()}
    for n in (1, TENANTS):
        a, b = cases[("a", n)], cases[("b", n)]
        name = "1 tenant" if n == 1 else f"{n} tenants"
        a_rate, b_rate = a.count / a.elapsed, b.count / b.elapsed
        row(f"{name}: events/s committed, b (baseline a)", b_rate, a_rate, 0)
        row(f"{name}: events/s sequenced in window, b (baseline a)",
            b.sequenced_in_window / b.elapsed, a_rate, 0)
        row(f"{name}: b backlog at window end, max events", max(b.backlog), None, 0)
        row(f"{name}: b drain after window, max ms", max(b.drain_ms), None, 1)
        for p, tag in ((0.5, "p50"), (0.99, "p99")):
            row(f"{name}: unit of work {tag} ms, b (baseline a)",
                pct(b.latencies, p), pct(a.latencies, p))
        a_holds = [float(r["ms"]) for r in await admin.fetch(A_HOLDS, list(a.labels))]
        b_holds = [float(r["ms"]) for r in await admin.fetch(
            B_HOLDS, [r.xid for r in b.runs], [r.locked_at for r in b.runs])]
        delays = [float(r["ms"]) for r in await admin.fetch(B_DELAYS, list(b.labels))]
        for p, tag in ((0.5, "p50"), (0.99, "p99")):
            row(f"{name}: a head lock held {tag} ms (baseline: WAL sync mean)",
                pct(a_holds, p), sync["a"], 3)
            row(f"{name}: b sequencer lock held {tag} ms (baseline: a head lock)",
                pct(b_holds, p), pct(a_holds, p), 3)
        for p, tag in ((0.5, "p50"), (0.99, "p99")):
            row(f"{name}: b feed delay {tag} ms, commit->sequenced (baseline: a unit {tag})",
                pct(delays, p), pct(a.latencies, p))
        row(f"{name}: b events per sequencer call, mean (baseline: tenants moved per call)",
            b.count / b.calls, len(b.runs) / b.calls, 1, ratio=False)
        row(f"{name}: server CPU us per event, b (baseline a)",
            b.server_cpu / b.count * 1e6, a.server_cpu / a.count * 1e6, 0)
        row(f"{name}: client CPU us per event, b (baseline a)",
            b.client_cpu / b.count * 1e6, a.client_cpu / a.count * 1e6, 0)
        row(f"{name}: WAL bytes per event, b (baseline a)", b.wal_bytes / b.wal_events,
            a.wal_bytes / a.wal_events, 0)
    row("WAL sync mean ms, during b cases (baseline: during a cases)", sync["b"], sync["a"], 3)
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--seconds", type=float, default=20.0,
                        help="per case, split over the rounds (default 20)")
    parser.add_argument("--rounds", type=int, default=5,
                        help="the cases take turns this many times (default 5)")
    parser.add_argument("--writers", type=int, default=16)
    args = parser.parse_args()
    asyncio.run(run(args.seconds, args.rounds, args.writers))


if __name__ == "__main__":
    if not __package__:
        sys.exit("run as a module from the repository root: python -m bench.write_designs")
    main()
