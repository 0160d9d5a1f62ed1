-- A ticket merged into another lists its public messages in the target's customer
-- thread (0900: ticket_contacts rows of role 'merged'), and the files on those messages
-- come with them: the uploads policy asked sees_ticket, which reads the tickets row
-- under the customer's own scope (their tickets and those they are copied on), so a
-- portal customer saw the merged message and got 404 for its file. The portal's branch
-- now asks contact_sees_ticket, the same question the messages policy asks (requester,
-- CC or reader of the merge target); the widget's stays sees_ticket, which holds the
-- merged tickets it reads through widget_tickets.
DROP POLICY customer_scope ON uploads;
CREATE POLICY customer_scope ON uploads AS RESTRICTIVE
    USING (NOT acting_scoped()
           OR (ticket_id IS NULL
               AND uploaded_by_kind = current_setting('app.actor_kind', true)
               AND uploaded_by_id = current_setting('app.actor_id', true))
           OR (visibility = 'public'
               AND CASE WHEN current_setting('app.actor_kind', true) = 'customer'
                        THEN contact_sees_ticket(tenant_id, ticket_id)
                        ELSE sees_ticket(tenant_id, ticket_id) END));
