// A ticket's history for auditors and admins: every event of its stream with the
// tenant seq, the stream version, the actor the database stamped and when it was
// recorded, a page at a time.

import {clearProblem, fill, h, showProblem} from '../dom.js';
import {dateTime, label, shortId} from '../format.js';

const PAGE = 50;

/** What an event did, in a few words. */
export function eventSummary(app, e) {
  const d = e.data ?? {};
  switch (e.type) {
    case 'TicketOpened':
      return `opened by ${app.directory.author(d.author)}: \u201c${d.subject}\u201d, ` +
        `${label(d.priority)}, via ${label(d.source)}` +
        (d.follow_up_of ? `, following up ${shortId(d.follow_up_of)}` : '');
    case 'MessageAdded':
      return `${d.visibility === 'internal' ? 'internal note' : 'public message'} by ` +
        `${app.directory.author(d.author)}`;
    case 'StateChanged':
      return `${label(d.from_state)} \u2192 ${label(d.to_state)}` +
        (d.reason ? ` (${d.reason})` : '');
    case 'TicketAssigned':
      return d.assignee ? `assigned to ${app.directory.agentName(d.assignee)}` : 'unassigned';
    case 'PriorityChanged':
      return `priority ${label(d.priority)}`;
    case 'TagsChanged':
      return [...(d.added ?? []).map((t) => `+${t}`), ...(d.removed ?? []).map((t) => `\u2212${t}`)]
        .join(' ');
    case 'SlaBreached':
      return `${label(d.metric)} breached (due ${dateTime(d.due_at)})`;
    case 'FollowUpOpened':
      return `follow-up ${shortId(d.follow_up_id)} opened`;
    case 'TicketSplit':
      return `${d.message_ids.length} message${d.message_ids.length === 1 ? '' : 's'} ` +
        `moved to ticket ${shortId(d.into)}`;
    case 'TicketSplitFrom':
      return `split off ticket ${shortId(d.source_id)} by ${app.directory.author(d.author)}: ` +
        `\u201c${d.subject}\u201d, ${d.message_ids.length} message` +
        `${d.message_ids.length === 1 ? '' : 's'} moved here`;
    case 'AgentAdded':
      return `agent ${d.name} <${d.email}> added, ${d.role}`;
    case 'AgentUpdated':
      return `agent ${app.directory.agentName(d.agent_id)} changed: ` +
        Object.entries(d).filter(([k, v]) => v !== null && ['email', 'name', 'role', 'active'].includes(k))
          .map(([k, v]) => `${k} ${v}`).join(', ');
    case 'AgentInvited':
      return `${d.name} <${d.email}> invited as ${d.role}, until ${dateTime(d.expires_at)}`;
    case 'AgentInvitationAccepted':
      return `invitation accepted by ${app.directory.agentName(d.agent_id)}`;
    case 'AgentPasswordSet':
      return `password set for ${app.directory.agentName(d.agent_id)}`;
    case 'AgentSignedIn':
      return `${app.directory.agentName(d.agent_id)} signed in`;
    case 'AgentSignedOut':
      return `${app.directory.agentName(d.agent_id)} signed out`;
    case 'AgentSessionRevoked':
      return `session of ${app.directory.agentName(d.agent_id)} revoked (${d.reason === 'replay' ? 'a used refresh token was presented again' : d.reason})`;
    case 'PortalLinkIssued':
      return `portal password link for contact ${shortId(d.contact_id)}, until ${dateTime(d.expires_at)}`;
    case 'PortalPasswordSet':
      return `portal password set by contact ${shortId(d.contact_id)}`;
    case 'PortalSignedIn':
      return `contact ${shortId(d.contact_id)} signed in to the portal`;
    case 'PortalSignedOut':
      return `contact ${shortId(d.contact_id)} signed out of the portal`;
    case 'PortalSessionRevoked':
      return `portal session of contact ${shortId(d.contact_id)} revoked (${d.reason === 'replay' ? 'a used refresh token was presented again' : d.reason === 'merged' ? 'the contact was merged' : d.reason})`;
    case 'ApiKeyIssued':
      return `${d.role} key “${d.name}” (${d.prefix}…) issued`;
    case 'ApiKeyRevoked':
      return `key ${shortId(d.key_id)} revoked`;
    case 'SettingsChanged':
      return 'settings replaced';
    case 'WebhookConfigured':
      return `webhook ${d.enabled ? 'enabled' : 'disabled'}: ${d.url}`;
    case 'MailboxCreated':
      return `mailbox ${d.address} added`;
    case 'MailboxChanged':
      return `mailbox ${shortId(d.mailbox_id)} changed`;
    case 'MailboxDeleted':
      return `mailbox ${d.address} deleted`;
    default:
      return '';
  }
}

/** When it happened (the command's time, in the event) as a table cell. */
export function atCell(e) {
  const at = e.data?.at;
  return h('td', null, at ? h('time', {datetime: at}, dateTime(at)) : '');
}

/** One event as a row of an events table: seq, then `stream` (the cell naming its
 * stream, where the table holds more than one stream), version, type, what it says, who
 * did it, when it happened and when it was recorded. */
export function eventRow(app, e, stream = null) {
  return h('tr', null,
    h('td', {class: 'num'}, String(e.seq)),
    stream === null ? null : h('td', null, stream),
    h('td', {class: 'num'}, String(e.version)),
    h('td', null, e.type),
    h('td', null, eventSummary(app, e)),
    h('td', null, app.directory.actor(e.actor)),
    atCell(e),
    h('td', null, h('time', {datetime: e.recorded_at}, dateTime(e.recorded_at))));
}

export function historyTable(app, ticketId) {
  const problems = h('div', {class: 'problems', hidden: true});
  const body = h('tbody');
  const more = h('button', {type: 'button', class: 'load-more', hidden: true}, 'Load more');
  let cursor = null;
  const element = h('section', {class: 'history', 'aria-labelledby': 'history-title'},
    h('h2', {id: 'history-title'}, 'History'),
    h('p', {class: 'help'}, 'Every event of the ticket, as recorded: seq is the tenant\u2019s ' +
      'sequence (the hash chain\u2019s order), version the ticket\u2019s own count; ' +
      '\u201cat\u201d is when it happened, \u201crecorded\u201d when it was stored.'),
    problems,
    h('div', {class: 'scroll', tabindex: 0, role: 'region', 'aria-label': 'History table'},
      h('table', {class: 'events'},
        h('thead', null, h('tr', null, ['Seq', 'Version', 'Event', 'What', 'Actor', 'At',
                                          'Recorded'].map((c) => h('th', {scope: 'col'}, c)))),
        body)),
    more);

  function rows(events) {
    return events.map((e) => eventRow(app, e));
  }

  async function page(first) {
    const answer = (await app.api.get(`/v1/tickets/${ticketId}/history`,
      {limit: PAGE, cursor: first ? null : cursor})).body;
    if (first) fill(body, rows(answer.data));
    else body.append(...rows(answer.data));
    cursor = answer.next_cursor;
    more.hidden = !cursor;
  }

  more.addEventListener('click', async () => {
    clearProblem(problems);
    try {
      await page(false);
    } catch (error) {
      showProblem(problems, error, 'More history could not be loaded');
    }
  });

  return {
    element,
    /** Reload from the first page; errors are the caller's to show. */
    reload: () => page(true),
  };
}
