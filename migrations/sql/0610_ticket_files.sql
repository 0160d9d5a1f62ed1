-- A ticket lists the files on its public messages (`TicketOut.attachments`, domain.ticket
-- `Ticket.files`). Tickets that got files before the ticket listed them take the list
-- from their messages' rows, oldest message first (a file's name blanked by an erasure
-- stays blank); `helpdesk migrate` then renders their documents anew, since none has
-- the key yet (projections/inline.py `fill_views`).

UPDATE tickets t
   SET state_json = t.state_json || jsonb_build_object('files', f.files)
  FROM (SELECT m.tenant_id, m.ticket_id,
               jsonb_agg(a || jsonb_build_object('message_id', m.id)
                         ORDER BY m.version, n) AS files
          FROM messages m, jsonb_array_elements(m.attachments) WITH ORDINALITY AS e(a, n)
         WHERE m.attachments IS NOT NULL AND m.visibility = 'public'
         GROUP BY m.tenant_id, m.ticket_id) f
 WHERE t.tenant_id = f.tenant_id AND t.id = f.ticket_id;
