-- The ticket document as the API sends it, kept ready next to the folded state.
--
-- Written by the command that changes the ticket, in its own transaction, so lists
-- and gets pass it through with no decoding or re-encoding (projections/views.py). A
-- row written before this column existed has none; readers render it from state_json
-- then, and `helpdesk migrate` fills the column in.
ALTER TABLE tickets ADD COLUMN view json;
