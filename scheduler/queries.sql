-- name: schedule --
-- $1 tenant_id, $2 kind, $3 dedupe_key, $4 payload, $5 run_at, $6 max_attempts
-- A live job with the same dedupe key is moved (new run_at, payload) instead of
-- doubled; a running one is left to finish and gets no second copy.
INSERT INTO jobs (tenant_id, kind, dedupe_key, payload, run_at, max_attempts)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (tenant_id, dedupe_key) WHERE dedupe_key IS NOT NULL AND status IN ('ready', 'running')
DO UPDATE SET run_at = EXCLUDED.run_at,
              payload = EXCLUDED.payload,
              updated_at = now()
        WHERE jobs.status = 'ready'
RETURNING id

-- name: cancel --
-- $1 tenant_id, $2 dedupe_key
DELETE FROM jobs
 WHERE tenant_id = $1 AND dedupe_key = $2 AND status = 'ready'

-- name: schedule_many --
-- $1 tenant_id, $2 kind, $3 dedupe keys, $4 payloads (JSON texts), $5 run_at times (ISO
-- texts), $6 max_attempts
-- ``schedule`` for several jobs of one kind in one statement (a ticket's SLA timers): one
-- insert, one run of the insert trigger. Texts rather than typed arrays, so the
-- statement can travel written out in a COMMIT's message (eventstore/literal.py).
INSERT INTO jobs (tenant_id, kind, dedupe_key, payload, run_at, max_attempts)
SELECT $1, $2, j.dedupe_key, j.payload::jsonb, j.run_at::timestamptz, $6
  FROM unnest($3::text[], $4::text[], $5::text[]) AS j(dedupe_key, payload, run_at)
ON CONFLICT (tenant_id, dedupe_key) WHERE dedupe_key IS NOT NULL AND status IN ('ready', 'running')
DO UPDATE SET run_at = EXCLUDED.run_at,
              payload = EXCLUDED.payload,
              updated_at = now()
        WHERE jobs.status = 'ready'

-- name: arm_worker --
-- (no arguments) Cross-tenant access to jobs for this transaction only.
SELECT set_config('app.worker', 'on', true)

-- name: arm_claimer --
-- (no arguments) arm_worker, plus the planner pinned to the claim's index-ordered scan.
-- A queue table goes from empty to many thousand rows within seconds, long before
-- autovacuum analyzes it; on stale statistics the planner estimates a handful of rows
-- and picks a bitmap scan plus sort of every due row, making each claim O(queue).
-- Walking jobs_due in run_at order and stopping at LIMIT is right at any size.
SELECT set_config('app.worker', 'on', true),
       set_config('enable_sort', 'off', true),
       set_config('enable_bitmapscan', 'off', true)

-- name: claim --
-- $1 now (the scheduler's clock), $2 limit, $3 lease seconds, $4 worker id
-- One statement: lock due ready jobs and running jobs whose lease ran out (their
-- worker died), skipping rows another worker holds, then mark them ours. Due-ness
-- uses the injected clock; the lease is real time, since it guards real processes.
-- Both branches have run_at <= $1 (a running job was due when first claimed), so
-- the scan walks the partial index jobs_due in run_at order and stops at $2 rows.
WITH due AS (
    SELECT id
      FROM jobs
     WHERE status IN ('ready', 'running')
       AND run_at <= $1
       AND (status = 'ready' OR locked_until < now())
     ORDER BY run_at
     LIMIT $2
       FOR UPDATE SKIP LOCKED
)
UPDATE jobs AS j
   SET status = 'running',
       attempts = j.attempts + 1,
       locked_until = now() + make_interval(secs => $3),
       locked_by = $4,
       updated_at = $1
  FROM due
 WHERE j.id = due.id
RETURNING j.id, j.tenant_id, j.kind, j.dedupe_key, j.payload, j.run_at, j.attempts,
          j.max_attempts

-- name: renew --
-- $1 job ids, $2 worker id, $3 lease seconds
-- Extend the lease of the jobs this worker is still running.
UPDATE jobs
   SET locked_until = now() + make_interval(secs => $3)
 WHERE id = ANY($1) AND locked_by = $2 AND status = 'running'
RETURNING id

-- name: complete --
-- $1 job ids, $2 worker id, $3 now
-- Only the current holder may complete: a worker whose lease ran out and whose job
-- was taken over cannot mark it done a second time.
UPDATE jobs
   SET status = 'done', locked_until = NULL, updated_at = $3
 WHERE id = ANY($1) AND locked_by = $2 AND status = 'running'
RETURNING id, tenant_id, kind, dedupe_key, payload, max_attempts

-- name: fail --
-- $1 job id, $2 worker id, $3 now, $4 retry at, $5 error, $6 attempt budget
-- Back to ready at the retry time, or dead once the attempts are used up; the last
-- error is kept either way.
UPDATE jobs
   SET status = CASE WHEN attempts >= $6::integer THEN 'dead' ELSE 'ready' END,
       run_at = CASE WHEN attempts >= $6::integer THEN run_at ELSE $4 END,
       locked_until = NULL,
       last_error = $5,
       updated_at = $3
 WHERE id = $1 AND locked_by = $2 AND status = 'running'
RETURNING status

-- name: release --
-- $1 job ids, $2 worker id
-- Hand unfinished jobs back at shutdown; the interrupted attempt does not count.
UPDATE jobs
   SET status = 'ready', locked_until = NULL, locked_by = NULL,
       attempts = greatest(attempts - 1, 0)
 WHERE id = ANY($1) AND locked_by = $2 AND status = 'running'
RETURNING id

-- name: next_due --
-- (no arguments) When the earliest ready job is due, or the earliest lease runs out.
SELECT (SELECT min(run_at) FROM jobs WHERE status = 'ready') AS next_run_at,
       (SELECT min(locked_until) FROM jobs WHERE status = 'running') AS next_expiry

-- name: ensure --
-- $1 tenant_id, $2 kind, $3 dedupe_key, $4 payload, $5 run_at, $6 max_attempts
-- Add a job unless a live one with the key exists (seeding periodic jobs: a restart
-- must not move a job that is already waiting).
INSERT INTO jobs (tenant_id, kind, dedupe_key, payload, run_at, max_attempts)
VALUES ($1, $2, $3, $4, $5, $6)
ON CONFLICT (tenant_id, dedupe_key) WHERE dedupe_key IS NOT NULL AND status IN ('ready', 'running')
DO NOTHING
RETURNING id

-- name: purge_finished --
-- $1 done before, $2 dead before, $3 batch size
-- Delete in bounded batches so one purge never holds many row locks or bloats WAL.
DELETE FROM jobs
 WHERE id IN (SELECT id
                FROM jobs
               WHERE (status = 'done' AND updated_at < $1)
                  OR (status = 'dead' AND updated_at < $2)
               LIMIT $3)

-- name: snooze --
-- $1 job id, $2 worker id, $3 run_at, $4 tenant_id
-- A running job puts itself back to ready at a later time (its timer moved while it
-- ran, when the write path could not move it). Runs in the handler's tenant session,
-- so it commits with the handler's own re-check.
UPDATE jobs
   SET status = 'ready', run_at = $3, attempts = 0, locked_until = NULL,
       locked_by = NULL, updated_at = now()
 WHERE tenant_id = $4 AND id = $1 AND locked_by = $2 AND status = 'running'

-- name: stale_tickets --
-- $1 tenant_id, $2 state, $3 untouched since, $4 limit
SELECT id
  FROM tickets
 WHERE tenant_id = $1 AND state = $2 AND updated_at < $3
 ORDER BY updated_at, id
 LIMIT $4

-- name: tenant_ids --
-- (no arguments) Every tenant (worker context).
SELECT id FROM tenants ORDER BY id

-- name: webhook_event --
-- $1 tenant_id, $2 seq: the event a delivery announces
SELECT tenant_id, seq, stream_id, version, type, schema_version, data, metadata,
       actor_kind, actor_id, recorded_at, hash
  FROM events WHERE tenant_id = $1 AND seq = $2

-- name: webhook_for_delivery --
-- $1 tenant_id
SELECT url, secret, event_types, enabled FROM webhooks WHERE tenant_id = $1
-- name: purge_expired_idempotency --
-- $1 tenant_id, $2 batch size
-- For the idempotency.purge job, run per tenant under that tenant's context. The outer
-- tenant_id names the tenant of the deleted rows themselves: on a table distributed
-- by tenant, a ctid alone names a row on no particular shard.
DELETE FROM idempotency_keys
 WHERE tenant_id = $1
   AND ctid IN (SELECT ctid FROM idempotency_keys
                 WHERE tenant_id = $1 AND expires_at <= now()
                 LIMIT $2)

-- name: withhold_idempotency_answers --
-- $1 tenant_id, $2 lower-case texts (ids, e-mails), $3 the refusal a replay answers
-- An erasure's: every recorded answer that names one of the texts is dropped, and the
-- record keeps only its refusal (a record whose answer is sealed shut, as for a secret):
-- a replay of the request answers the refusal, not the request run afresh. Answers that
-- hold a secret are sealed, and hold no contact's data.
UPDATE idempotency_keys
   SET response_bytes = NULL, response_body = NULL, response_sealed = true, refusal = $3
 WHERE tenant_id = $1 AND NOT response_sealed
   AND EXISTS (SELECT 1 FROM unnest($2::text[]) AS t (text)
                WHERE strpos(lower(coalesce(convert_from(response_bytes, 'UTF8'),
                                            response_body::text)), t.text) > 0)
