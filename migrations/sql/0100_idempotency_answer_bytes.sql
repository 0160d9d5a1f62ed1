-- Idempotency records keep the first answer's bytes as they were sent, so a replay
-- repeats it exactly (a jsonb copy came back re-serialised, its keys in another order).
--
-- response_bytes   the answer's body as sent; for an answer that holds a secret (an
--                  issued API key), the body sealed with AES-GCM under a key derived
--                  from IDEMPOTENCY_SECRET (a process setting, never in the database)
--                  and the record's own key, or NULL when no secret is configured.
-- response_sealed  the answer holds a secret: replay it only by opening the seal.
-- refusal          for a sealed answer: the problem a replay answers when the seal
--                  cannot be opened (it names what the first request created).
-- response_body    now only in records written before this migration; they expire
--                  within 24 hours and are replayed from it until then.
ALTER TABLE idempotency_keys
    ADD COLUMN response_bytes bytea,
    ADD COLUMN response_sealed boolean NOT NULL DEFAULT false,
    ADD COLUMN refusal jsonb,
    ALTER COLUMN response_body DROP NOT NULL,
    ADD CONSTRAINT idempotency_keys_sealed_refusal CHECK (NOT response_sealed OR refusal IS NOT NULL),
    ADD CONSTRAINT idempotency_keys_answer CHECK (
        response_sealed OR response_bytes IS NOT NULL OR response_body IS NOT NULL);
