-- The as-of list's index (0611) with the validity bounds as keys, and of stamped
-- versions only.
--
-- Keys, not INCLUDEd: a plain index scan tests INCLUDE columns on the heap row it
-- fetched, so the walk read a ticket's every kept version (about four rows per row
-- kept) to keep the one valid at the seq. As keys after (created_at, id),
-- `valid_from_seq <= N` and `valid_to_seq > N` are conditions of the index scan, tested
-- on each entry, and only the valid version's row is fetched. The keyset order is
-- unchanged (the bounds come after the unique (created_at, id)).
--
-- Partial, `WHERE valid_from_seq IS NOT NULL`: with the bounds as keys of an index
-- over every row (tried as 0940, reverted), the stamp trigger's two UPDATEs (0641,
-- `tenant_id = ... AND id = ... AND version = ...`) were planned on this index instead
-- of the primary key: on a table without statistics both are estimated at one row and
-- priced within 1 % of each other, this one with the lower start-up cost, and the scan
-- it makes tests `id` in the index but `version` on each row, so a message read every
-- version of its ticket (604 rows on a 300-message thread,
-- tests/integration/test_message_cost.py). Those UPDATEs say nothing of
-- `valid_from_seq`, so Postgres cannot prove they match this index's predicate and
-- never considers it; the as-of list's `valid_from_seq <= N` implies it, so the list
-- walks it. A version is stamped when its event is appended, in the same command, and
-- no as-of list can show it before; its insert so skips this index, which it enters
-- when the trigger stamps it.
-- (docs/performance.md, "The desk as of a seq".)
DROP INDEX ticket_versions_keyset;
CREATE INDEX ticket_versions_keyset
    ON ticket_versions (tenant_id, created_at, id, valid_from_seq, valid_to_seq)
    WHERE valid_from_seq IS NOT NULL;
