// Bulk actions on the queue's selected tickets: assign, change the state, add a tag.
// Each ticket is its own command, sent with If-Match on the version the queue showed
// (and an Idempotency-Key), so a ticket someone changed meanwhile is refused (412) and
// left as it is; the report says, ticket by ticket, what was done and what was not,
// and why, in the API's words.

import {newIdempotencyKey} from '../api.js';
import {announce, busy, fill, h} from '../dom.js';
import {STATES, label} from '../format.js';

const AT_ONCE = 4;

/** Why one ticket's command was refused, as people read it. */
function why(error) {
  if (error.status === 412) {
    return 'someone else changed it after the queue showed it; it was left as it is '
      + '(open it to see the change, then try again)';
  }
  return error.problem?.detail || error.problem?.title || String(error.message ?? error);
}

/** The bar above the list, and the selection it acts on. ``tickets`` are the cards'
 * tickets by id (their versions are what If-Match sends); ``updated`` redraws a card
 * with a ticket as the command left it. */
export function bulkBar(app, tickets, updated) {
  const chosen = new Set();
  const count = h('span', {class: 'bulk-count', role: 'status'});
  const report = h('div', {class: 'bulk-report', hidden: true, tabindex: -1});
  const agent = h('select', {id: 'bulk-assignee', name: 'assignee'},
    app.directory.myId() ? h('option', {value: 'me'}, 'Me') : null,
    h('option', {value: 'none'}, 'Unassigned'));
  const state = h('select', {id: 'bulk-state', name: 'state'},
    STATES.filter((s) => s !== 'closed').map((s) => h('option', {value: s}, label(s))));
  const tag = h('input', {id: 'bulk-tag', name: 'tag', type: 'text', autocomplete: 'off'});
  const mayState = app.session.may('POST /v1/tickets/{ticket_id}/state');
  const mayTags = app.session.may('POST /v1/tickets/{ticket_id}/tags');
  const form = h('form', {class: 'bulk', 'aria-label': 'Bulk actions', hidden: true},
    count,
    h('div', {class: 'bulk-action'}, h('label', {for: 'bulk-assignee'}, 'Assign to'), agent,
      h('button', {type: 'button', onclick: () => run('assign')}, 'Assign selected')),
    mayState ? h('div', {class: 'bulk-action'}, h('label', {for: 'bulk-state'}, 'State'), state,
      h('button', {type: 'button', onclick: () => run('state')}, 'Set state')) : null,
    mayTags ? h('div', {class: 'bulk-action'}, h('label', {for: 'bulk-tag'}, 'Tag'), tag,
      h('button', {type: 'button', onclick: () => run('tag')}, 'Add tag')) : null,
    h('button', {type: 'button', class: 'quiet', onclick: () => selection.clear(true)},
      'Unselect all'));

  function agentOptions() {
    const keep = agent.value;
    fill(agent, app.directory.myId() ? h('option', {value: 'me'}, 'Me') : null,
      h('option', {value: 'none'}, 'Unassigned'),
      app.directory.activeAgents().map((a) => h('option', {value: a.id}, a.name)));
    if ([...agent.options].some((o) => o.value === keep)) agent.value = keep;
  }

  function changed() {
    form.hidden = !chosen.size;
    fill(count, `${chosen.size} selected`);
    if (chosen.size) agentOptions();
  }

  const selection = {
    has: (id) => chosen.has(id),
    toggle(id, on) {
      if (on) chosen.add(id);
      else chosen.delete(id);
      changed();
    },
    clear(uncheck = false) {
      chosen.clear();
      if (uncheck) {
        for (const box of document.querySelectorAll('.ticket-item .pick')) box.checked = false;
      }
      changed();
    },
  };

  /** The command for one ticket: path and body. */
  function commandFor(what) {
    if (what === 'assign') {
      const to = agent.value === 'me' ? app.directory.myId()
        : agent.value === 'none' ? null : agent.value;
      return ['assignee', {agent_id: to},
        to ? `assigned to ${app.directory.agentName(to)}` : 'unassigned'];
    }
    if (what === 'state') return ['state', {state: state.value}, `now ${label(state.value)}`];
    const value = tag.value.trim().toLowerCase();
    return value ? ['tags', {add: [value]}, `tagged ${value}`] : null;
  }

  async function run(what) {
    const command = commandFor(what);
    if (!command) {
      fill(report, h('p', {class: 'problem', role: 'alert'}, 'Write the tag to add first.'));
      report.hidden = false;
      tag.focus();
      return;
    }
    const [path, body, done] = command;
    const ids = [...chosen].filter((id) => tickets.has(id));
    const outcomes = [];
    await busy(form, async () => {
      const queue = [...ids];
      const worker = async () => {
        while (queue.length) {
          const id = queue.shift();
          const seen = tickets.get(id);
          try {
            const answer = await app.api.post(`/v1/tickets/${id}/${path}`, body,
              {ifMatch: seen.version, idempotencyKey: newIdempotencyKey()});
            updated(answer.body);
            outcomes.push({ticket: seen, ok: true});
          } catch (error) {
            outcomes.push({ticket: seen, ok: false, error});
          }
        }
      };
      await Promise.all(Array.from({length: Math.min(AT_ONCE, ids.length)}, worker));
    });
    const failed = outcomes.filter((o) => !o.ok);
    const made = outcomes.length - failed.length;
    fill(report,
      h('p', {role: failed.length ? 'alert' : 'status'},
        `${made} of ${outcomes.length} ${done}.`,
        failed.length ? ` ${failed.length} not changed:` : ''),
      failed.length ? h('ul', {class: 'bulk-failures'}, failed.map((o) => h('li', null,
        h('a', {href: `#/tickets/${o.ticket.id}`}, o.ticket.subject), `: ${why(o.error)}`)))
        : null);
    report.hidden = false;
    announce(`${made} of ${outcomes.length} tickets ${done}`);
    selection.clear(true);
    for (const o of failed) {
      selection.toggle(o.ticket.id, true);
      const box = document.querySelector(`.ticket-item[data-id="${o.ticket.id}"] .pick`);
      if (box) box.checked = true;
    }
    if (failed.length) report.focus();
  }

  return {element: h('div', {class: 'bulk-box'}, form, report), selection};
}
