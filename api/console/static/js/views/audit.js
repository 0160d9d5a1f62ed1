// Audit, for auditors and admins: verify the tenant's hash chain (GET /v1/audit/verify,
// as many ranges as the chain needs), how to export it (the operator's command line:
// there is no export over HTTP), the tenant's events page by page (GET /v1/events),
// and a ticket opened by its id.

import {busy, clearProblem, fill, h, showProblem} from '../dom.js';
import {dateTime, shortId} from '../format.js';
import {eventRow} from './history.js';

const VERIFY_SPAN = 100_000; // the most seqs one verify request recomputes
const PAGE = 50;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function verifySection(app) {
  const problems = h('div', {class: 'problems', hidden: true});
  const progress = h('p', {class: 'progress', role: 'status'});
  const result = h('div', {class: 'verify-result'});
  const form = h('form', {class: 'verify', 'aria-labelledby': 'verify-title'},
    h('h2', {id: 'verify-title'}, 'Hash chain'),
    h('p', {class: 'help'}, 'Every event\u2019s hash covers the one before it. Verifying ' +
      'recomputes them all from the stored events and compares: an edited, removed or ' +
      'reordered event breaks the chain at its seq.'),
    h('button', {type: 'submit', class: 'primary'}, 'Verify the chain'),
    progress, problems, result);
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    clearProblem(problems);
    fill(result);
    await busy(form, async () => {
      try {
        let from = 1;
        let checked = 0;
        let head = null;
        for (;;) {
          const answer = (await app.api.get('/v1/audit/verify',
            {from_seq: from, to_seq: from + VERIFY_SPAN - 1})).body;
          checked += answer.checked;
          head = answer.head_seq;
          fill(progress, `Verified seq ${from} to ${answer.to_seq} of ${head}\u2026`);
          if (!answer.ok) {
            fill(result, h('div', {class: 'verdict bad', role: 'alert'},
              h('p', null, h('strong', null, 'The chain is broken'),
                ` at seq ${answer.first_bad_seq}.`),
              h('p', null, `Events before seq ${answer.first_bad_seq} verify; that event does ` +
                'not match the hash chain: it or an earlier one was changed outside the ' +
                'service. Export the events and compare them with a copy kept elsewhere.')));
            return;
          }
          if (answer.to_seq >= head) break;
          from = answer.to_seq + 1;
        }
        fill(result, h('div', {class: 'verdict good', role: 'status'},
          h('p', null, h('strong', null, 'The chain is intact'),
            head ? `: seq 1 to ${head} verified (${checked} events).` : ': no events yet.'),
          h('p', {class: 'help'}, `Checked ${dateTime(new Date())}.`)));
      } catch (error) {
        showProblem(problems, error, 'The chain could not be verified');
      } finally {
        fill(progress);
      }
    });
  });
  return form;
}

function exportSection(app) {
  const tenant = app.session.principal.tenant;
  const file = `${tenant.name.toLowerCase().replace(/[^a-z0-9]+/g, '-')}-events.jsonl`;
  const command = (text) => h('pre', {class: 'command', tabindex: 0}, h('code', null, text));
  return h('section', {class: 'export', 'aria-labelledby': 'export-title'},
    h('h2', {id: 'export-title'}, 'Export'),
    h('p', null, 'The API has no export endpoint: exports are the operator\u2019s, with the ' +
      'command line on the server (it reads as the runtime role, under this tenant\u2019s ' +
      'row-level security). Each line is an event with its chain hash; the file verifies ' +
      'on its own, with no database.'),
    command(`helpdesk audit export --tenant ${tenant.id} > ${file}`),
    command(`helpdesk audit verify --file ${file}`),
    h('p', null, 'Parts of the chain: ', h('code', null, '--from-seq N --to-seq M'),
      '. Over the API, the same events are readable page by page with ',
      h('code', null, 'GET /v1/events?after_seq=N'), ', as in the table below.'));
}

// Contacts, organizations, groups and ticket fields have streams of their own; the
// first two have pages in the console (for a role that may open them).
const OTHER_STREAMS = [['Contact', 'contact', 'contacts', 'GET /v1/contacts/{contact_id}'],
  ['Organization', 'organization', 'organizations',
   'GET /v1/organizations/{organization_id}'],
  ['Group', 'group'], ['TicketField', 'ticket field']];

function streamCell(app, e, tenantId) {
  if (e.stream_id === tenantId) return 'tenant';
  const other = OTHER_STREAMS.find(([prefix]) => e.type.startsWith(prefix));
  if (other) {
    const [, name, path, needs] = other;
    const text = `${name} ${shortId(e.stream_id)}`;
    return path && app.session.may(needs) ? h('a', {href: `#/${path}/${e.stream_id}`}, text)
      : text;
  }
  return h('a', {href: `#/tickets/${e.stream_id}`}, `ticket ${shortId(e.stream_id)}`);
}

function eventsSection(app) {
  const problems = h('div', {class: 'problems', hidden: true});
  const after = h('input', {id: 'events-after', name: 'after_seq', type: 'number', min: 0,
                            value: 0, inputmode: 'numeric'});
  const body = h('tbody');
  const more = h('button', {type: 'button', class: 'load-more', hidden: true}, 'Load more');
  let cursor = null;
  let query = {after_seq: 0};
  const tenantId = app.session.principal.tenant.id;

  function rows(events) {
    return events.map((e) => eventRow(app, e, streamCell(app, e, tenantId)));
  }

  async function page(first) {
    clearProblem(problems);
    try {
      const answer = (await app.api.get('/v1/events',
        {...query, limit: PAGE, cursor: first ? null : cursor})).body;
      if (first) fill(body, rows(answer.data));
      else body.append(...rows(answer.data));
      cursor = answer.next_cursor;
      more.hidden = !cursor;
    } catch (error) {
      showProblem(problems, error, 'The events could not be loaded');
    }
  }

  const form = h('form', {class: 'inline-form', 'aria-label': 'Events from a seq'},
    h('label', {for: 'events-after'}, 'After seq'), after,
    h('button', {type: 'submit'}, 'Show'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    query = {after_seq: after.value || 0};
    page(true);
  });
  more.addEventListener('click', () => page(false));
  page(true);
  return h('section', {class: 'events-section', 'aria-labelledby': 'events-title'},
    h('h2', {id: 'events-title'}, 'Events'),
    form, problems,
    h('div', {class: 'scroll', tabindex: 0, role: 'region', 'aria-label': 'Events table'},
      h('table', {class: 'events'},
        h('thead', null, h('tr', null,
          ['Seq', 'Stream', 'Version', 'Event', 'What', 'Actor', 'At', 'Recorded']
            .map((c) => h('th', {scope: 'col'}, c)))),
        body)),
    more);
}

function openTicketSection(app) {
  const problems = h('div', {class: 'problems', hidden: true});
  const input = h('input', {id: 'open-ticket', name: 'ticket', type: 'text', autocomplete: 'off',
                            spellcheck: 'false', 'aria-describedby': 'open-ticket-hint'});
  const form = h('form', {class: 'inline-form', 'aria-labelledby': 'open-title'},
    h('h2', {id: 'open-title'}, 'Open a ticket'),
    h('label', {for: 'open-ticket'}, 'Ticket id'), input,
    h('span', {id: 'open-ticket-hint', class: 'hint'}, 'its full id, as in the events'),
    h('button', {type: 'submit'}, 'Open'), problems);
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const id = input.value.trim();
    if (!UUID.test(id)) {
      showProblem(problems, {problem: {title: 'Not a ticket id',
        detail: 'A ticket id looks like 6f1c2a9e-0b1d-4c8e-9a55-3d2f1e0c7b44.'}});
      input.focus();
      return;
    }
    app.navigate(`#/tickets/${id}`);
  });
  return form;
}

export function auditView(app) {
  const problems = h('div', {class: 'problems', hidden: true});
  // Names for the actors (admins may read agents and keys); ids show without them.
  app.directory.load().catch((error) => showProblem(problems, error,
    'The names of agents and keys could not be loaded'));
  const element = h('section', {class: 'audit', 'aria-labelledby': 'audit-title'},
    h('h1', {id: 'audit-title', tabindex: -1}, 'Audit'), problems,
    h('div', {class: 'panel-row'}, verifySection(app), exportSection(app)),
    app.session.may('GET /v1/tickets/{ticket_id}') ? openTicketSection(app) : null,
    eventsSection(app));
  return {element, title: 'Audit'};
}
