// Words and numbers as people read them.

export const STATES = ['open', 'pending', 'on_hold', 'solved', 'closed'];
/** What the list's ``state=active`` stands for. */
export const ACTIVE_STATES = ['open', 'pending', 'on_hold'];
export const PRIORITIES = ['urgent', 'high', 'normal', 'low'];
export const SOURCES = ['email', 'portal', 'chat', 'slack', 'phone', 'api'];
/** The SLA metrics in the order a ticket shows them; the last three only on tickets whose
 * SLA policy measures them (absent from `sla` otherwise). */
export const METRICS = ['first_response', 'next_reply', 'resolution', 'periodic_update',
  'requester_wait', 'agent_work'];

const LABELS = {
  active: 'Active (not solved or closed)', open: 'Open', pending: 'Pending', on_hold: 'On hold', solved: 'Solved', closed: 'Closed',
  urgent: 'Urgent', high: 'High', normal: 'Normal', low: 'Low',
  email: 'E-mail', portal: 'Portal', chat: 'Chat', slack: 'Slack', phone: 'Phone', api: 'API',
  first_response: 'First response', next_reply: 'Next reply', resolution: 'Resolution',
  periodic_update: 'Periodic update', requester_wait: 'Requester wait', agent_work: 'Agent work',
  lt_1d: 'Under a day', '1d_3d': '1 to 3 days', '3d_7d': '3 to 7 days', gte_7d: 'A week or more',
};

export function label(value) {
  return LABELS[value] ?? String(value);
}

const dateTimeFormat = new Intl.DateTimeFormat(undefined, {dateStyle: 'medium', timeStyle: 'short'});
const dayFormat = new Intl.DateTimeFormat(undefined, {month: 'short', day: 'numeric', timeZone: 'UTC'});

export function dateTime(value) {
  return value ? dateTimeFormat.format(new Date(value)) : '';
}

/** A UTC day (YYYY-MM-DD) as "Jun 3". */
export function day(isoDay) {
  return dayFormat.format(new Date(`${isoDay}T00:00:00Z`));
}

/** Milliseconds as "2 d 4 h", "3 h 5 min", "45 s". */
export function duration(ms) {
  if (ms === null || ms === undefined) return '–';
  const s = Math.round(Math.abs(ms) / 1000);
  const d = Math.floor(s / 86400);
  const hours = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  if (d) return hours ? `${d} d ${hours} h` : `${d} d`;
  if (hours) return m ? `${hours} h ${m} min` : `${hours} h`;
  if (m) return `${m} min`;
  return `${s} s`;
}

/** A countdown: "1:02:03", or "2 d 03:04:05" past a day. */
export function countdown(ms) {
  const s = Math.floor(Math.abs(ms) / 1000);
  const d = Math.floor(s / 86400);
  const hms = [Math.floor((s % 86400) / 3600), Math.floor((s % 3600) / 60), s % 60]
    .map((n, i) => (i === 0 && !d ? String(n) : String(n).padStart(2, '0'))).join(':');
  return d ? `${d} d ${hms}` : hms;
}

/** "3 min ago" or "in 2 h" relative to ``now`` (milliseconds). */
export function relative(value, now) {
  const ms = new Date(value).getTime() - now;
  if (Math.abs(ms) < 45_000) return 'just now';
  return ms < 0 ? `${duration(ms)} ago` : `in ${duration(ms)}`;
}

export function hours(ms) {
  return ms === null || ms === undefined ? null : ms / 3_600_000;
}

export function percent(share) {
  return share === null || share === undefined ? '–' : `${Math.round(share * 100)}%`;
}

export function shortId(id) {
  return String(id).slice(0, 8);
}
