-- Deflection in the analytics summary: tickets solved or closed with no public message
-- and no internal note from staff. The ticket rows count staff notes beside public agent
-- replies; the summary cells count deflected tickets beside one-touch ones.
--
-- Rows projected before this have no count of their notes: staff_notes stays null on
-- them (never deflected) until `helpdesk migrate` counts them from their events and
-- refills the summary cells (handlers/upgrades.py; projections.analytics
-- count_staff_notes). Rows the projection writes from now on always carry a count.
ALTER TABLE analytics_tickets ADD COLUMN staff_notes integer CHECK (staff_notes >= 0);
ALTER TABLE analytics_summary_cells ADD COLUMN deflected integer NOT NULL DEFAULT 0;
