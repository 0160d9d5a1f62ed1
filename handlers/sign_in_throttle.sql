-- The rules are in the functions of migration 0552 (the table is read-only to the
-- runtime role); handlers/sign_in_throttle.py says what they are for.

-- name: blocked_until --
-- $1 key hashes, $2 now
SELECT sign_in_blocked_until($1::bytea[], $2)

-- name: count_failure --
-- $1 key hash, $2 now, $3 window, $4 allowed failures, $5 first backoff,
-- $6 longest backoff, $7 rows of keys quiet since before this are deleted
SELECT sign_in_count_failure($1, $2, $3, $4, $5, $6, $7)

-- name: forget --
-- $1 key hash
SELECT sign_in_forget($1)
