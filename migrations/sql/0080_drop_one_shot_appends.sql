-- Drop the one-shot append functions: group commit (0060) and the lone append that
-- arms its own tenant and actor (0004's append_events_as).
--
-- Nothing in the service called them: commands append inside their own unit of work
-- (EventStore.session, then Session.append, which calls append_events), and only a
-- benchmark used the one-shot path. A function nobody calls is still a way in for the
-- runtime role and code to keep correct, so it goes.

DROP FUNCTION append_group_as(uuid[], text[], text[], uuid[], integer[], integer[],
                              text[], integer[], jsonb[], jsonb[]);
DROP FUNCTION append_events_as(uuid, text, text, uuid, integer, text[], integer[],
                               jsonb[], jsonb[]);
