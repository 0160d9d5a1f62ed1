-- A ticket's contact is checked by the write path, not by a foreign key.
--
-- The key's check takes a KEY SHARE lock on the contact's row for every ticket opened
-- for it, and many concurrent lockers of one row queue on creating and replacing the
-- row's multixact: opening tickets for one busy requester ran at half the rate of
-- opening them without contacts (bench/http.py --contacts, 16 connections). The write
-- path resolves the contact in the ticket's own transaction (handlers/requesters.py)
-- and contacts are never deleted (a merge keeps the merged row), so the key guarded
-- nothing the code does not.
ALTER TABLE tickets DROP CONSTRAINT tickets_tenant_id_contact_id_fkey;
