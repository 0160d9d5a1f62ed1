-- name: integration_get --
-- $1 tenant_id
SELECT id, channel_id, bot_user_id, notices, version, last_error, last_error_at, last_ok_at,
       created_at, updated_at, bot_token, bot_token_kek
  FROM slack_integrations WHERE tenant_id = $1

-- name: integration_lock --
-- $1 tenant_id
SELECT id, channel_id, bot_user_id, notices, version, bot_token, bot_token_kek,
       signing_secret, signing_secret_kek
  FROM slack_integrations WHERE tenant_id = $1 FOR UPDATE

-- name: integration_insert --
-- $1 tenant_id, $2 id, $3 channel_id, $4 bot_user_id, $5 bot_token, $6 bot_token_kek,
-- $7 signing_secret, $8 signing_secret_kek, $9 notices, $10 at
-- Nothing when the tenant connected Slack meanwhile: the caller changes that one.
INSERT INTO slack_integrations (tenant_id, id, channel_id, bot_user_id, bot_token,
                                bot_token_kek, signing_secret, signing_secret_kek, notices,
                                version, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, 1, $10, $10)
ON CONFLICT DO NOTHING
RETURNING id, channel_id, bot_user_id, notices, version, last_error, last_error_at,
          last_ok_at, created_at, updated_at

-- name: integration_update --
-- $1 tenant_id, $2 channel_id, $3 bot_user_id, $4 bot_token, $5 bot_token_kek,
-- $6 signing_secret, $7 signing_secret_kek, $8 notices, $9 at
UPDATE slack_integrations
   SET channel_id = $2, bot_user_id = $3, bot_token = $4, bot_token_kek = $5,
       signing_secret = $6, signing_secret_kek = $7, notices = $8,
       version = version + 1, updated_at = $9
 WHERE tenant_id = $1
RETURNING id, channel_id, bot_user_id, notices, version, last_error, last_error_at,
          last_ok_at, created_at, updated_at

-- name: integration_delete --
-- $1 tenant_id
DELETE FROM slack_integrations WHERE tenant_id = $1
RETURNING id, channel_id, bot_user_id, notices, version, last_error, last_error_at,
          last_ok_at, created_at, updated_at

-- name: integration_lookup --
-- $1 integration id
SELECT tenant_id, signing_secret, signing_secret_kek FROM slack_lookup($1)

-- name: slack_health --
SELECT integrations, failing FROM slack_health()

-- name: integration_failed --
-- $1 tenant_id, $2 error, $3 at
UPDATE slack_integrations SET last_error = $2, last_error_at = $3 WHERE tenant_id = $1

-- name: integration_ok --
-- $1 tenant_id, $2 at
UPDATE slack_integrations SET last_ok_at = $2 WHERE tenant_id = $1

-- name: event_claim --
-- $1 tenant_id, $2 event_id, $3 at
-- First in the event's transaction: a concurrent retry of the same event waits here for
-- this one to commit, then inserts nothing.
INSERT INTO slack_events (tenant_id, event_id, outcome, received_at)
VALUES ($1, $2, 'pending', $3)
ON CONFLICT DO NOTHING
RETURNING event_id

-- name: event_seen --
-- $1 tenant_id, $2 event_id
SELECT outcome, reason, ticket_id, message_id FROM slack_events
 WHERE tenant_id = $1 AND event_id = $2

-- name: event_settle --
-- $1 tenant_id, $2 event_id, $3 outcome, $4 reason, $5 ticket_id, $6 message_id
UPDATE slack_events SET outcome = $3, reason = $4, ticket_id = $5, message_id = $6
 WHERE tenant_id = $1 AND event_id = $2

-- name: thread_insert --
-- $1 tenant_id, $2 ticket_id, $3 channel_id, $4 thread_ts, $5 at
-- Nothing when the message opened a ticket before (under another event id).
INSERT INTO slack_threads (tenant_id, ticket_id, channel_id, thread_ts, created_at)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT DO NOTHING
RETURNING ticket_id

-- name: thread_ticket --
-- $1 tenant_id, $2 channel_id, $3 thread_ts
SELECT ticket_id FROM slack_threads WHERE tenant_id = $1 AND channel_id = $2 AND thread_ts = $3

-- name: thread_moved --
-- $1 tenant_id, $2 from ticket_id, $3 to ticket_id
-- A follow-up of a closed ticket takes its thread over.
UPDATE slack_threads SET ticket_id = $3 WHERE tenant_id = $1 AND ticket_id = $2

-- name: thread_of_ticket --
-- $1 tenant_id, $2 ticket_id
SELECT channel_id, thread_ts FROM slack_threads WHERE tenant_id = $1 AND ticket_id = $2

-- name: post_insert --
-- $1 tenant_id, $2 id, $3 dedupe_key, $4 kind, $5 ticket_id, $6 message_id, $7 channel_id,
-- $8 thread_ts, $9 status, $10 reason, $11 at
-- Nothing when a retried job made it already: its row stands.
INSERT INTO slack_posts (tenant_id, id, dedupe_key, kind, ticket_id, message_id, channel_id,
                         thread_ts, status, reason, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
ON CONFLICT DO NOTHING

-- name: post_take --
-- $1 tenant_id, $2 dedupe_key
SELECT id, kind, channel_id, thread_ts, status, in_doubt, ts, attempts FROM slack_posts
 WHERE tenant_id = $1 AND dedupe_key = $2 FOR UPDATE

-- name: post_in_doubt --
-- $1 tenant_id, $2 id
-- Committed before the call: a worker that dies in it leaves the row to be looked for.
UPDATE slack_posts SET in_doubt = true WHERE tenant_id = $1 AND id = $2

-- name: post_done --
-- $1 tenant_id, $2 id, $3 status, $4 reason, $5 ts, $6 at (sent_at, NULL unless sent),
-- $7 in doubt still (the answer was lost: the post may have gone through)
UPDATE slack_posts
   SET status = $3, reason = $4, ts = $5, sent_at = $6, in_doubt = $7,
       attempts = attempts + 1
 WHERE tenant_id = $1 AND id = $2

-- name: posts_of_ticket --
-- $1 tenant_id, $2 ticket_id
SELECT id, kind, message_id, channel_id, thread_ts, status, ts, reason, attempts, created_at,
       sent_at
  FROM slack_posts WHERE tenant_id = $1 AND ticket_id = $2
 ORDER BY created_at, id
