// SLA clocks as people read them: a live countdown while a clock runs (the page's one
// ticker in main.js updates every [data-due] element each second), and otherwise
// paused with the budget left, breached (a breach latches), met, or not running. A
// warned clock (past the tenant's warning share of its target) is amber, on the ticket
// page and in the queue's badge. Each clock names the SLA policy behind it, by the
// name recorded with the clock.

import {countdown, dateTime, duration, label, METRICS} from '../format.js';
import {now} from '../api.js';
import {h} from '../dom.js';

/** What a clock is doing: 'fulfilled', 'paused', 'running', 'breached' (and stopped)
 * or 'idle'; a breach latches, so a running or paused clock may be breached too. */
export function clockState(clock) {
  if (clock.fulfilled_at) return 'fulfilled';
  if (clock.paused) return 'paused';
  if (clock.due_at) return 'running';
  if (clock.breached_at) return 'breached';
  return 'idle';
}

function due(at) {
  const left = new Date(at).getTime() - now();
  return h('span', {class: `countdown${left < 0 ? ' overdue' : ''}`, dataset: {due: at}},
    left >= 0 ? `due in ${countdown(left)}` : `overdue by ${countdown(left)}`);
}

/** The next deadline among a ticket's running clocks (ms), or Infinity: the key of the
 * queue's "SLA due" order, as the API's ``sort=sla_due`` keeps it. */
export function nextDue(ticket) {
  const due = METRICS.map((m) => ticket.sla[m]).filter((c) => c && clockState(c) === 'running')
    .map((c) => new Date(c.due_at).getTime());
  return due.length ? Math.min(...due) : Infinity;
}

/** The badge a queue row shows: a breach, else the clock due soonest. ``past``: the
 * ticket as it stood at a past moment, its due time said, not counted from now. */
export function slaSummary(ticket, past = false) {
  const clocks = METRICS.filter((m) => ticket.sla[m]).map((m) => [m, ticket.sla[m]]);
  const breached = clocks.filter(([, c]) => c.breached_at && !c.fulfilled_at);
  if (breached.length) {
    return h('span', {class: 'badge sla-breached'},
      `SLA breached: ${breached.map(([m]) => label(m).toLowerCase()).join(', ')}`);
  }
  const running = clocks.filter(([, c]) => clockState(c) === 'running')
    .sort(([, a], [, b]) => a.due_at.localeCompare(b.due_at));
  if (!running.length) return null;
  const [metric, clock] = running[0];
  const when = past ? `due ${dateTime(clock.due_at)}` : due(clock.due_at);
  if (clock.warned_at) {
    return h('span', {class: 'badge sla-warned'}, `${label(metric)} (warned) `, when);
  }
  return h('span', {class: 'badge sla-running'}, `${label(metric)} `, when);
}

/** The words naming a clock's policy: the name recorded with the clock (the policy's
 * at the version the clock runs on), else, on a clock recorded before names were, its
 * name when ``policyName`` knows it (a role that may read policies), else its id; and
 * the version the clock runs on. */
function policyLine(policy, policyName) {
  const name = policy.policy_name ?? policyName?.(policy.policy_id);
  const calendar = policy.calendar_id
    ? `calendar ${policy.calendar_id.slice(0, 8)} version ${policy.calendar_version}`
    : 'calendar time';
  return h('p', {class: 'clock-policy', title: `SLA policy ${policy.policy_id}, ${calendar}`},
    name ? ['Policy ', h('strong', null, name), `, version ${policy.policy_version}`]
      : `SLA policy ${policy.policy_id.slice(0, 8)}, version ${policy.policy_version}`);
}

/** One clock as a card of the ticket page; ``policyName(id)`` names a policy, or
 * answers null. */
export function clockCard(metric, clock, policyName) {
  const state = clockState(clock);
  let status;
  let detail = null;
  const warned = Boolean(clock.warned_at) && !clock.breached_at && state !== 'fulfilled';
  if (state === 'running') {
    status = [clock.breached_at ? 'Breached, still running: '
      : warned ? 'Warned, running: ' : 'Running: ', due(clock.due_at)];
    detail = `Due ${dateTime(clock.due_at)} (target ${duration(clock.target_ms)})`;
  } else if (state === 'paused') {
    status = clock.breached_at ? 'Breached, paused' : 'Paused';
    detail = `${duration(clock.remaining_ms)} of the ${duration(clock.target_ms)} budget left`;
  } else if (state === 'breached') {
    status = 'Breached';
    detail = `Breached ${dateTime(clock.breached_at)}`;
  } else if (state === 'fulfilled') {
    status = clock.breached_at ? 'Met late (breached)' : 'Met';
    detail = `Met ${dateTime(clock.fulfilled_at)}` +
      (clock.breached_at ? `, after the breach of ${dateTime(clock.breached_at)}` : '');
  } else {
    status = 'Not running';
    detail = metric === 'next_reply' ? 'No customer message is waiting for an answer'
      : 'Stopped';
  }
  const breached = Boolean(clock.breached_at);
  return h('li', {class: `clock clock-${state}${breached ? ' clock-breached' : ''}` +
                         (warned ? ' clock-warned' : ''),
                  dataset: {metric}},
    h('h3', null, label(metric)),
    h('p', {class: 'clock-status'}, status),
    h('p', {class: 'clock-detail'}, detail),
    // The policy behind the clock, by the name the ticket's answer records with it,
    // for every role (agents may not read policies themselves).
    clock.policy ? policyLine(clock.policy, policyName) : null);
}
