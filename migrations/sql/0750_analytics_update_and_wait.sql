-- Periodic update and requester wait in the analytics summary (docs/analytics.md).
--
-- Each ticket row keeps, from the clocks recorded on its events: whether a
-- requester-wait clock ran on it, whether it missed (breached, or solved over its
-- budget), the business time the requester waited by the latest solve; and the
-- periodic updates judged (each ended by a public reply or a solve, or breached) and
-- those met, with the due time of the update owed now, to judge it when it ends.
-- The summary cells count them beside the other metrics, with a histogram of the wait.
--
-- Rows projected before this count none of them until the analytics projection is
-- rebuilt (`helpdesk projections rebuild analytics`): nothing else records the clocks.
ALTER TABLE analytics_tickets
    ADD COLUMN requester_wait_measured boolean NOT NULL DEFAULT false,
    ADD COLUMN requester_wait_missed boolean NOT NULL DEFAULT false,
    ADD COLUMN requester_wait_ms bigint,
    ADD COLUMN periodic_updates integer NOT NULL DEFAULT 0 CHECK (periodic_updates >= 0),
    ADD COLUMN periodic_updates_met integer NOT NULL DEFAULT 0
        CHECK (periodic_updates_met >= 0),
    ADD COLUMN periodic_update_due_at timestamptz;
ALTER TABLE analytics_summary_cells
    ADD COLUMN measured_requester_wait integer NOT NULL DEFAULT 0,
    ADD COLUMN met_requester_wait integer NOT NULL DEFAULT 0,
    ADD COLUMN periodic_updates integer NOT NULL DEFAULT 0,
    ADD COLUMN periodic_updates_met integer NOT NULL DEFAULT 0,
    ADD COLUMN requester_wait integer[] NOT NULL DEFAULT '{}';
