-- Agent work in the analytics summary (docs/analytics.md), beside requester wait.
--
-- Each ticket row keeps, from the clocks recorded on its events: whether an
-- agent-work clock ran on it, whether it missed (breached, or solved over its
-- budget), and the business time the ticket was open by the latest solve. The summary
-- cells count them, with a histogram of the time worked.
--
-- Rows projected before this count none of them until the analytics projection is
-- rebuilt (`helpdesk projections rebuild analytics`): nothing else records the clocks.
ALTER TABLE analytics_tickets
    ADD COLUMN agent_work_measured boolean NOT NULL DEFAULT false,
    ADD COLUMN agent_work_missed boolean NOT NULL DEFAULT false,
    ADD COLUMN agent_work_ms bigint;
ALTER TABLE analytics_summary_cells
    ADD COLUMN measured_agent_work integer NOT NULL DEFAULT 0,
    ADD COLUMN met_agent_work integer NOT NULL DEFAULT 0,
    ADD COLUMN agent_work integer[] NOT NULL DEFAULT '{}';
