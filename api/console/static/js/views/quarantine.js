// A mailbox's quarantine (GET /v1/mailboxes/{id}/quarantine, docs/email.md): the mail
// it could not take in, oldest first, each with when it came, its sender and subject
// (as far as its headers could be read), the reason and the attempts, a page at a time
// ("Load more" along next_cursor). "Retry" takes a mail in again (POST .../retry): taken
// in, it leaves the list and the answer says what it became (a ticket is linked);
// refused again, its row shows the new reason. "Discard" forgets it (DELETE). What each
// did is said in the panel's status line; a refusal (a mail discarded meanwhile, a lost
// connection) is shown whole in the panel.

import {newIdempotencyKey} from '../api.js';
import {announce, busy, clearProblem, fill, h, showProblem} from '../dom.js';
import {dateTime} from '../format.js';

export const QUARANTINE_PAGE = 10;

const OUTCOMES = {ticket: 'became a new ticket', reply: 'was added to its ticket',
  follow_up: 'opened a follow-up ticket', ignored: 'was ignored', bounce: 'was a bounce',
  duplicate: 'had been taken in before'};

/** The panel of ``box``'s quarantine: ``section`` to place, ``show`` to read the first
 * page (once; again after a change made elsewhere is the reader's reload). */
export function quarantinePanel(app, box) {
  const base = `/v1/mailboxes/${box.id}/quarantine`;
  const one = '/v1/mailboxes/{mailbox_id}/quarantine/{quarantined_id}';
  const mayChange = app.session.may(`POST ${one}/retry`);
  const mayDiscard = app.session.may(`DELETE ${one}`);
  const rows = h('tbody');
  const empty = h('p', {class: 'help', hidden: true}, 'No mail in quarantine.');
  const status = h('p', {class: 'saved', role: 'status'});
  const problems = h('div', {class: 'problems', hidden: true});
  const more = h('button', {type: 'button', class: 'load-more', hidden: true}, 'Load more');
  const label = `Quarantine of ${box.address}`;
  const table = h('div', {class: 'scroll', tabindex: 0, role: 'region',
    'aria-label': `${label} table`}, h('table', {class: 'quarantine'},
    h('thead', null, h('tr', null, ['Received', 'From', 'Subject', 'Reason', 'Attempts', '']
      .map((c) => h('th', {scope: 'col'}, c)))), rows));
  const section = h('section', {class: 'quarantine-panel', 'aria-label': label},
    h('h3', null, 'Quarantine'), status, problems, empty, table, more);
  let cursor = null;
  let shown = false;

  function settle() {
    empty.hidden = rows.children.length > 0;
  }

  function row(q) {
    const reason = h('td', {class: 'reason'}, q.reason);
    const attempts = h('td', {class: 'num attempts'}, String(q.attempts));
    const what = q.subject ?? '(subject unreadable)';
    const actions = h('td', {class: 'actions'});
    const tr = h('tr', {dataset: {id: q.id}},
      h('td', null, h('time', {datetime: q.created_at}, dateTime(q.created_at))),
      h('td', {class: 'from'}, q.from ?? '(sender unreadable)'),
      h('td', {class: 'subject'}, what), reason, attempts, actions);
    if (mayChange) {
      actions.append(h('button', {type: 'button', onclick: () => act(tr, async () => {
        const taken = (await app.api.post(`${base}/${q.id}/retry`, undefined,
          {idempotencyKey: newIdempotencyKey()})).body;
        if (taken.outcome === 'quarantined') {
          reason.textContent = taken.reason ?? '';
          attempts.textContent = String(Number(attempts.textContent) + 1);
          say(`Still quarantined: ${taken.reason ?? 'refused again'}`);
          return;
        }
        tr.remove();
        settle();
        const ticket = taken.ticket_id
          ? h('a', {href: `#/tickets/${taken.ticket_id}`}, 'Open the ticket') : null;
        say(`Taken in: the mail ${OUTCOMES[taken.outcome] ?? taken.outcome}.`, ticket);
      }, 'The mail could not be retried')}, 'Retry'));
    }
    if (mayDiscard) {
      actions.append(h('button', {type: 'button', onclick: () => act(tr,
        async () => {
          await app.api.request('DELETE', `${base}/${q.id}`,
            {idempotencyKey: newIdempotencyKey()});
          tr.remove();
          settle();
          say(`Discarded: ${q.from ?? 'the mail'} \u2014 ${what}`);
        }, 'The mail could not be discarded')}, 'Discard'));
    }
    return tr;
  }

  function say(text, ...extra) {
    fill(status, text, ...extra.filter(Boolean).flatMap((e) => [' ', e]));
    announce(text);
  }

  /** Run ``work`` with the row's buttons disabled; a refusal shown in the panel. */
  async function act(tr, work, context) {
    clearProblem(problems);
    fill(status);
    try {
      await busy(tr, work);
    } catch (error) {
      showProblem(problems, error, context);
    }
  }

  async function page(first) {
    clearProblem(problems);
    try {
      const answer = (await app.api.get(base, {limit: QUARANTINE_PAGE,
        cursor: first ? null : cursor})).body;
      if (first) fill(rows, answer.data.map(row));
      else rows.append(...answer.data.map(row));
      cursor = answer.next_cursor;
      more.hidden = !cursor;
      settle();
    } catch (error) {
      showProblem(problems, error, 'The quarantine could not be loaded');
    }
  }

  more.addEventListener('click', () => busy(section, () => page(false)));
  return {section, show: () => {
    if (shown) return;
    shown = true;
    page(true);
  }};
}
