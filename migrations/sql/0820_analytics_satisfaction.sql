-- Satisfaction in the analytics summary (docs/analytics.md).
--
-- Each ticket row keeps the requester's latest rating (a later SatisfactionRated
-- replaces an earlier one); the summary cells count, beside the other metrics, the
-- solved tickets that carry a rating and those rated good. The satisfaction score is
-- good / rated and the response rate rated / solved.
--
-- Rows projected before this carry no rating until the analytics projection is
-- rebuilt (`helpdesk projections rebuild analytics`): the projection read no ratings.
ALTER TABLE analytics_tickets
    ADD COLUMN rating text CHECK (rating IN ('good', 'bad'));
ALTER TABLE analytics_summary_cells
    ADD COLUMN rated integer NOT NULL DEFAULT 0,
    ADD COLUMN rated_good integer NOT NULL DEFAULT 0;
