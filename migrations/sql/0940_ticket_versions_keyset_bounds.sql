-- The as-of list's index (0611) with the validity bounds as keys, not INCLUDEd: a
-- plain index scan tests INCLUDE columns only on the heap row it fetched, so the walk
-- read a ticket's every kept version (about four rows per row kept) to keep the one
-- valid at the seq. As keys after (created_at, id), `valid_from_seq <= N` and
-- `valid_to_seq > N` are index conditions: the btree tests them on each index entry
-- and fetches the valid version's row only. The keyset order is unchanged (the bounds
-- come after the unique (created_at, id)), so the walk still starts at its row value.
-- (docs/performance.md, "The desk as of a seq".)
DROP INDEX ticket_versions_keyset;
CREATE INDEX ticket_versions_keyset
    ON ticket_versions (tenant_id, created_at, id, valid_from_seq, valid_to_seq);
