// One ticket: the conversation (public replies and internal notes look different),
// the reply and note form (one Idempotency-Key per draft, so a double click or a retry
// after a lost answer posts once), state, priority, assignee and tags changed with
// If-Match (a 412 says someone else changed the ticket and shows it as it is now),
// the SLA clocks counting down, and the history for auditors and admins. The requester
// links to their contact; the group is changed with the assignee (an assignee who is
// not a member of the group is refused, 409 not_group_member, and said so); the ticket
// field values are shown and edited as /v1/ticket-fields defines them, and a state the
// fields are required for names the fields still empty. Agents split chosen messages
// off to a new ticket (the Split control) and are taken to it.
//
// Who else is on the ticket shows under its title, from the live feed's presence: this
// page says it is viewing when it opens (again every few seconds), typing while the
// message box is written in, and gone when it closes. The reply and note form sends
// If-Match with the version its draft was begun on (the page's version while the box
// is empty; a change of the agent's own moves it on): a 412 says that someone replied
// meanwhile, shows what came in, and keeps the draft, which sends as it is next time.
//
// On a ticket with mail (GET /v1/tickets/{id}/mail), each message that came in or
// went out by mail says so: whom it was to and copied to, and for a reply mailed out
// its delivery, queued, sent, retrying (with the last failure) or dead (with the
// reason); while one is still on its way the mail is read again every few seconds.
// The customers copied on the ticket (its CCs) show beside the requester.

import {newIdempotencyKey, now} from '../api.js';
import {announce, busy, clearProblem, fill, h, notFoundPage, showProblem} from '../dom.js';
import {METRICS, PRIORITIES, STATES, dateTime, label, shortId} from '../format.js';
import {attachmentList, filePicker, ticketFiles} from './files.js';
import {cannedReplies, macroPanel} from './automation.js';
import {historyTable} from './history.js';
import {clockCard} from './sla.js';

const MESSAGE_PAGES = 20;
const PRESENCE_REFRESH_MS = 10_000; // well inside WS_PRESENCE_SECONDS (30 s by default)
const TYPING_EVERY_MS = 2_000; // at most one "typing" per this, while keys are pressed
const TYPING_RECENT_MS = 4_000; // a refresh says "typing" if a key came this recently
const MAIL_RECHECK_MS = 3_000; // how soon a reply still on its way is looked at again

/** A reply's delivery as people say it: a queued row that failed once is retrying. */
export function deliveryState(mail) {
  if (mail.status === 'queued' && mail.attempts > 0 && mail.reason) return 'retrying';
  return mail.status;
}

/** What a message's mail row says: by mail from whom, to and copied to whom, and for
 * one mailed out how its delivery went. */
function mailNote(mail) {
  const copied = mail.cc.length ? ` · cc ${mail.cc.join(', ')}` : '';
  if (mail.direction === 'in') {
    return h('p', {class: 'mail-note'}, `By mail from ${mail.from} to ${mail.to.join(', ')}`
      + copied);
  }
  const state = deliveryState(mail);
  const when = state === 'sent' && mail.sent_at ? ` ${dateTime(mail.sent_at)}` : '';
  return h('p', {class: 'mail-note', dataset: {delivery: state}},
    `Mailed to ${mail.to.join(', ') || 'no one'}${copied} · `,
    h('span', {class: `badge delivery delivery-${state}`}, label(state)), when,
    mail.attempts > 1 || state !== 'sent' ? ` · ${mail.attempts} attempt`
      + (mail.attempts === 1 ? '' : 's') : null,
    mail.reason && state !== 'sent' ? h('span', {class: 'mail-reason'}, ` · ${mail.reason}`)
      : null);
}

function messageItem(app, m, opening = false, mail = null) {
  // The first message opened the ticket: the customer's own, or a customer's words an
  // agent took down (on the phone, from a mail): the agent is the author of record,
  // the words are the customer's, and it reads so.
  const logged = opening && m.author.kind === 'agent';
  const kind = m.visibility === 'internal' ? 'internal'
    : m.author.kind === 'customer' || logged ? 'customer' : 'public';
  const what = logged ? 'From the customer' : opening ? 'Opened the ticket'
    : {internal: 'Internal note', customer: 'From the customer', public: 'Public reply'}[kind];
  const by = app.directory.author(m.author);
  return h('li', {class: `message message-${kind}`, dataset: {id: m.id}},
    h('article', {'aria-label': logged ? `${what}, logged by ${by}` : `${what} by ${by}`},
      h('header', null,
        h('span', {class: 'message-kind'}, what),
        logged ? h('span', {class: 'message-logged'}, 'logged by ',
          h('strong', {class: 'message-author'}, by))
          : h('strong', {class: 'message-author'}, by),
        h('time', {datetime: m.created_at}, dateTime(m.created_at))),
      kind === 'internal' ? h('p', {class: 'internal-hint'}, 'Not visible to the customer')
        : null,
      mail ? mailNote(mail) : null,
      h('div', {class: 'message-body'}, m.body),
      attachmentList(app, m.attachments)));
}

function summary(t) {
  return {State: label(t.state), Priority: label(t.priority),
          Assignee: t.assignee ?? 'none', Group: t.group_id ?? 'none',
          Tags: t.tags.join(', ') || 'none',
          Fields: JSON.stringify(t.fields ?? {})};
}

/** A field value as people read it. */
function fieldText(definition, value) {
  if (value === null || value === undefined || (Array.isArray(value) && !value.length)) {
    return 'none';
  }
  if (definition?.type === 'checkbox') return value ? 'Yes' : 'No';
  const title = (v) => definition?.options.find((o) => o.value === v)?.title ?? String(v);
  return Array.isArray(value) ? value.map(title).join(', ') : title(value);
}

/** The keys of the fields a refusal says still need a value ("solving needs a value for
 * a, b"), or none. */
function missingFields(error) {
  const match = /needs a value for (.+)$/.exec(error?.problem?.detail ?? '');
  return match ? match[1].split(',').map((k) => k.trim()).filter(Boolean) : [];
}

/** The control of one ticket field (the ticket page's field editor, the new ticket
 * form): ``element``, and ``value()`` as the API takes it. */
export function fieldControl(f, value) {
  const id = `field-${f.key}`;
  const name = `field-${f.key}`;
  const required = f.required_on ? h('span', {class: 'hint'},
    f.required_on === 'solve' ? ' (needed to solve)' : ' (needed to open)') : null;
  const heading = h('label', {for: id}, f.title, required);
  const options = f.options.filter((o) => o.active || o.value === value
    || (Array.isArray(value) && value.includes(o.value)));
  if (f.type === 'checkbox') {
    const box = h('input', {id, name, type: 'checkbox', checked: value === true});
    return {key: f.key, element: h('div', {class: 'field-row'}, h('label', {class: 'check'},
      box, f.title, required)),
    // An unset checkbox stays unset until someone ticks or unticks it.
    value: () => (box.checked ? true : value === undefined || value === null ? null : false)};
  }
  if (f.type === 'dropdown') {
    const select = h('select', {id, name}, h('option', {value: '', selected: !value}, 'None'),
      options.map((o) => h('option', {value: o.value, selected: o.value === value}, o.title)));
    return {key: f.key, element: h('div', {class: 'field-row'}, heading, select),
            value: () => select.value || null};
  }
  if (f.type === 'multiselect') {
    const held = Array.isArray(value) ? value : [];
    const boxes = options.map((o) => h('input', {type: 'checkbox', name, value: o.value,
                                                 checked: held.includes(o.value)}));
    return {key: f.key, element: h('fieldset', {class: 'field-row'},
      h('legend', null, f.title, required),
      boxes.map((b, i) => h('label', {class: 'check'}, b, options[i].title))),
    value: () => {
      const chosen = boxes.filter((b) => b.checked).map((b) => b.value);
      return chosen.length ? chosen : (held.length ? [] : null);
    }};
  }
  const type = {number: 'number', date: 'date'}[f.type] ?? 'text';
  const input = h('input', {id, name, type, autocomplete: 'off', step: type === 'number' ? 'any' : null,
                            value: value === null || value === undefined ? '' : String(value)});
  return {key: f.key, element: h('div', {class: 'field-row'}, heading, input),
          value: () => {
            const raw = input.value.trim();
            if (!raw) return null;
            return type === 'number' ? Number(raw) : raw;
          }};
}

export function ticketView(app, id) {
  const may = (op) => app.session.may(op);
  if (!may('GET /v1/tickets/{ticket_id}')) return app.refusal('Ticket');
  const canRead = may('GET /v1/tickets/{ticket_id}/messages');
  const canWrite = may('POST /v1/tickets/{ticket_id}/messages');
  const canHistory = may('GET /v1/tickets/{ticket_id}/history');
  const canMail = canRead && may('GET /v1/tickets/{ticket_id}/mail');
  let ticket = null;
  let mailTimer = null;
  let formsDrawn = null;
  let disposed = false;
  let timer = null;

  const title = h('h1', {id: 'ticket-title', tabindex: -1}, 'Ticket');
  const meta = h('p', {class: 'meta'});
  // The numbers auditors and developers ask for, out of everyone else's way.
  const details = h('details', {class: 'ticket-details'}, h('summary', null, 'Details'));
  const problems = h('div', {class: 'problems', hidden: true});
  const conflictBox = h('div', {class: 'conflict', hidden: true, tabindex: -1});
  const liveNote = h('div', {class: 'live-note', role: 'status'});
  const presenceBox = h('p', {class: 'presence', 'aria-live': 'polite', hidden: true});
  const messages = h('ol', {class: 'messages', 'aria-label': 'Conversation, oldest first'});
  const properties = h('div', {class: 'properties'});
  const fieldsBox = h('div', {class: 'ticket-fields'});
  const clocks = h('ul', {class: 'clocks'});
  const filesBox = h('div', {class: 'ticket-files'});
  let shown = [];
  const links = h('div', {class: 'links'});
  const rating = h('section', {class: 'satisfaction', 'aria-labelledby': 'rating-title',
                               hidden: true});
  const history = canHistory ? historyTable(app, id) : null;
  const drafts = app.drafts;
  const reply = canWrite && canRead ? replyForm() : null;
  const splitter = canRead && may('POST /v1/tickets/{ticket_id}/split') ? splitPanel() : null;
  const back = may('GET /v1/tickets') ? h('a', {href: '#/queue'}, '\u2190 Queue')
    : may('GET /v1/audit/verify') ? h('a', {href: '#/audit'}, '\u2190 Audit') : null;

  const element = h('section', {class: 'ticket-page', 'aria-labelledby': 'ticket-title'},
    back ? h('p', {class: 'back'}, back) : null,
    title, meta, presenceBox, problems, conflictBox, liveNote,
    h('div', {class: 'ticket-grid'},
      h('div', {class: 'ticket-main'},
        h('section', {class: 'conversation', 'aria-labelledby': 'conversation-title'},
          h('h2', {id: 'conversation-title'}, 'Conversation'),
          canRead ? messages : h('p', {class: 'help'},
            `The ${app.session.principal.role} role may not read the conversation.` +
            (canHistory ? ' Every message is in the history below.' : '')),
          reply?.element, splitter?.element)),
      h('aside', {class: 'ticket-side', 'aria-label': 'Ticket details'},
        h('section', {'aria-labelledby': 'sla-title'},
          h('h2', {id: 'sla-title'}, 'SLA clocks'), clocks),
        canWrite ? macroPanel(app, id, () => ticket, (t) => (t ? showTicket(t) : reload()))
          : null,
        h('section', {'aria-labelledby': 'properties-title'},
          h('h2', {id: 'properties-title'}, 'Properties'), properties),
        h('section', {'aria-labelledby': 'fields-title'},
          h('h2', {id: 'fields-title'}, 'Fields'), fieldsBox),
        canRead ? h('section', {'aria-labelledby': 'files-title'},
          h('h2', {id: 'files-title'}, 'Files'), filesBox) : null,
        rating, links, details)),
    history?.element);

  function showTicket(t) {
    ticket = t;
    fill(title, t.subject);
    fill(meta,
      h('span', {class: `badge state-${t.state}`}, label(t.state)), ' ',
      h('span', {class: `badge priority-${t.priority}`}, label(t.priority)), ' ',
      requester(t),
      h('span', null, ` · via ${label(t.source)} · opened ${dateTime(t.created_at)}`),
      t.reopen_count ? h('span', null, ` · reopened ${t.reopen_count}\u00d7`) : null,
      t.ccs?.length ? h('span', {class: 'ccs'}, ' · cc ', t.ccs.map((c) => (c.name
        ? `${c.name} <${c.email}>` : c.email)).join(', ')) : null);
    fill(details, h('summary', null, 'Details'), h('dl', null,
      h('div', {class: 'property'}, h('dt', null, 'Ticket id'), h('dd', null, t.id)),
      h('div', {class: 'property'}, h('dt', null, 'Version'),
        h('dd', {class: 'version'}, `version ${t.version}`))));
    // The forms are drawn again only when there is something new to draw: a reload of
    // the same version (the live feed coming up) keeps what someone is choosing.
    const drawn = `${t.version}:${app.directory.generation}`;
    if (drawn !== formsDrawn) {
      formsDrawn = drawn;
      fill(properties, propertyForms(t));
      fill(fieldsBox, fieldsForm(t));
    }
    fill(clocks, METRICS.filter((m) => t.sla[m]).map((m) => clockCard(m, t.sla[m],
      (policy) => app.directory.policyName(policy))));
    const related = [
      t.follow_up_of ? h('li', null, 'Follow-up of ',
        h('a', {href: `#/tickets/${t.follow_up_of}`}, `ticket ${shortId(t.follow_up_of)}`)) : null,
      ...t.follow_up_ids.map((f) => h('li', null, 'Followed up by ',
        h('a', {href: `#/tickets/${f}`}, `ticket ${shortId(f)}`))),
      t.split_from ? h('li', null, 'Split off ',
        h('a', {href: `#/tickets/${t.split_from}`}, `ticket ${shortId(t.split_from)}`)) : null,
      ...(t.split_into ?? []).map((s) => h('li', null, 'Messages moved to ',
        h('a', {href: `#/tickets/${s}`}, `ticket ${shortId(s)}`))),
    ].filter(Boolean);
    showRating(t.satisfaction);
    fill(links, related.length ? [h('h2', null, 'Related tickets'), h('ul', null, related)] : []);
    reply?.closed(t.state === 'closed');
    splitter?.update(t);
    document.title = `${t.subject} · Helpdesk console`;
  }

  // The requester's latest rating (a later one replaces it): good or bad, the
  // comment they left, when and how they rated (docs/teamwork.md).
  function showRating(given) {
    rating.hidden = !given;
    if (!given) {
      fill(rating);
      return;
    }
    fill(rating, h('h2', {id: 'rating-title'}, 'Satisfaction'),
      h('p', null, h('span', {class: `badge rating-${given.rating}`},
        given.rating === 'good' ? 'Good' : 'Bad'),
        h('span', {class: 'rated-at'}, ` rated ${dateTime(given.rated_at)} via ${
          label(given.via)}`)),
      given.comment ? h('blockquote', {class: 'rating-comment'}, given.comment) : null);
  }

  function requester(t) {
    const who = t.requester.name ? `${t.requester.name} <${t.requester.email}>`
      : t.requester.email;
    if (!t.requester.contact_id || !may('GET /v1/contacts/{contact_id}')) {
      return h('span', {class: 'requester'}, who);
    }
    app.directory.rememberContact({id: t.requester.contact_id, ...t.requester});
    return h('a', {class: 'requester', href: `#/contacts/${t.requester.contact_id}`}, who);
  }

  async function loadTicket() {
    const t = (await app.api.get(`/v1/tickets/${id}`)).body;
    if (!disposed) showTicket(t);
    return t;
  }

  async function loadMessages() {
    if (!canRead) return;
    const all = [];
    let cursor = null;
    for (let page = 0; page < MESSAGE_PAGES; page += 1) {
      const answer = (await app.api.get(`/v1/tickets/${id}/messages`, {limit: 100, cursor})).body;
      all.push(...answer.data);
      cursor = answer.next_cursor;
      if (!cursor) break;
    }
    const mail = await loadMail();
    if (disposed) return;
    const byMessage = new Map(mail.filter((r) => r.message_id).map((r) => [r.message_id, r]));
    fill(messages, all.map((m, i) => messageItem(app, m, i === 0, byMessage.get(m.id))));
    recheckMail(all, mail, byMessage);
    shown = all;
    fill(filesBox, ticketFiles(app, shown));
    splitter?.messages(all);
  }

  /** The ticket's mail rows (none where the role may not read them). */
  async function loadMail() {
    return canMail ? (await app.api.get(`/v1/tickets/${id}/mail`)).body.data : [];
  }

  /** While a reply is on its way (its row queued, or a reply on a mail ticket that no
   * mail row names yet: the mail.send job makes it), the messages are drawn again a
   * moment later to show how it went. */
  function recheckMail(all, mail, byMessage) {
    clearTimeout(mailTimer);
    const recent = now() - 10 * 60_000;
    const unsent = mail.some((r) => r.direction === 'in') && all.some((m, i) => i > 0
      && m.visibility === 'public' && m.author.kind === 'agent' && !byMessage.has(m.id)
      && Date.parse(m.created_at) > recent);
    if (!unsent && !mail.some((r) => r.direction === 'out' && r.status === 'queued')) return;
    mailTimer = setTimeout(() => {
      if (!disposed) loadMessages().catch((error) => showProblem(problems, error,
        'The mail could not be loaded'));
    }, MAIL_RECHECK_MS);
  }

  async function reload() {
    clearProblem(problems);
    try {
      await Promise.all([loadTicket(), loadMessages(), history?.reload()]);
      if (!disposed) reply?.rebase(ticket.version, shown);
    } catch (error) {
      if (disposed) return;
      if (error.status === 404 && !ticket) {
        // Nothing to show or change: a page that says so, without the forms.
        dispose();
        element.replaceChildren(notFoundPage('Ticket',
          'No ticket has this address in this helpdesk: the link may be mistyped, or the '
          + 'ticket was never here.', back));
        document.title = 'Ticket not found \u00b7 Helpdesk console';
        element.querySelector('h1').focus();
        return;
      }
      showProblem(problems, error, 'The ticket could not be loaded');
    }
  }

  // -- changing the ticket ------------------------------------------------------------

  async function command(form, path, body, done) {
    clearProblem(problems);
    conflictBox.hidden = true;
    const seen = ticket;
    try {
      const answer = await busy(form, () => app.api.post(`/v1/tickets/${id}/${path}`, body,
        {ifMatch: seen.version, idempotencyKey: newIdempotencyKey()}));
      reply?.movedOn(seen.version, answer.body.version);
      showTicket(answer.body);
      announce(done);
    } catch (error) {
      if (error.status === 412) {
        await conflict(seen, error);
        return;
      }
      showProblem(problems, error, 'The change was not made');
      const missing = missingFields(error);
      if (missing.length) {
        problems.firstChild.append(h('p', {class: 'missing-fields'}, 'Fill in first: ',
          missing.map((k) => app.directory.fieldTitle(k)).join(', '), '.'));
        for (const key of missing) {
          fieldsBox.querySelector(`[name="field-${key}"]`)?.setAttribute('aria-invalid', 'true');
        }
      }
    }
  }

  /** If-Match failed: someone else changed the ticket since this page loaded it. */
  async function conflict(seen, error) {
    let fresh;
    try {
      fresh = await loadTicket();
      await loadMessages();
    } catch (loadError) {
      showProblem(problems, loadError, 'The ticket could not be reloaded');
      return;
    }
    const before = summary(seen);
    const after = summary(fresh);
    const changed = Object.keys(after).filter((k) => before[k] !== after[k]);
    const named = (k, v) => (k === 'Assignee' && v !== 'none' ? app.directory.agentName(v)
      : k === 'Group' ? app.directory.groupName(v) : v);
    fill(conflictBox,
      h('h2', null, 'Someone else changed this ticket'),
      h('p', null, `Your change was not made: the ticket changed after this page showed it ` +
        `(${error.problem.detail}). It is shown below as it is now; make your change again ` +
        'if it still applies.'),
      h('ul', null, changed.map((k) => h('li', null, h('strong', null, `${k}: `),
        `${named(k, before[k])} \u2192 ${named(k, after[k])}`))));
    conflictBox.hidden = false;
    conflictBox.setAttribute('role', 'alert');
    conflictBox.focus();
  }

  function propertyForms(t) {
    const readOnly = (name, value) => h('div', {class: 'property'}, h('dt', null, name),
      h('dd', null, value));
    const terminal = t.state === 'closed';
    const forms = [];
    if (may('POST /v1/tickets/{ticket_id}/state') && !terminal) {
      const select = h('select', {id: 'prop-state', name: 'state'},
        STATES.map((s) => h('option', {value: s, selected: s === t.state}, label(s))));
      const reason = h('input', {id: 'prop-reason', name: 'reason', type: 'text',
                                 maxlength: 500, autocomplete: 'off'});
      const form = h('form', {class: 'property-form', 'aria-label': 'Change the state'},
        h('label', {for: 'prop-state'}, 'State'), select,
        h('label', {for: 'prop-reason', class: 'secondary'}, 'Reason (optional)'), reason,
        h('button', {type: 'submit'}, 'Change state'));
      form.addEventListener('submit', (e) => {
        e.preventDefault();
        command(form, 'state', {state: select.value, ...(reason.value.trim()
          ? {reason: reason.value.trim()} : {})}, `State changed to ${label(select.value)}`);
      });
      forms.push(form);
    } else {
      forms.push(h('dl', null, readOnly('State', label(t.state))));
    }
    if (may('POST /v1/tickets/{ticket_id}/priority') && !terminal) {
      const select = h('select', {id: 'prop-priority', name: 'priority'},
        PRIORITIES.map((p) => h('option', {value: p, selected: p === t.priority}, label(p))));
      const form = h('form', {class: 'property-form', 'aria-label': 'Change the priority'},
        h('label', {for: 'prop-priority'}, 'Priority'), select,
        h('button', {type: 'submit'}, 'Change priority'));
      form.addEventListener('submit', (e) => {
        e.preventDefault();
        command(form, 'priority', {priority: select.value},
          `Priority changed to ${label(select.value)}`);
      });
      forms.push(form);
    } else {
      forms.push(h('dl', null, readOnly('Priority', label(t.priority))));
    }
    if (may('POST /v1/tickets/{ticket_id}/assignee') && !terminal) {
      const me = app.directory.myId();
      if (me && t.assignee !== me) {
        const form = h('form', {class: 'property-form assign-me', 'aria-label': 'Assign to me'},
          h('button', {type: 'submit'}, 'Assign to me'));
        form.addEventListener('submit', (e) => {
          e.preventDefault();
          command(form, 'assignee', {agent_id: me}, 'Assigned to you');
        });
        forms.push(form);
      }
      forms.push(assignForm(t));
    } else {
      forms.push(h('dl', null,
        readOnly('Group', app.directory.groupName(t.group_id)),
        readOnly('Assignee', t.assignee ? app.directory.agentName(t.assignee) : 'Unassigned')));
    }
    if (may('POST /v1/tickets/{ticket_id}/tags') && !terminal) {
      const input = h('input', {id: 'prop-tag', name: 'tag', type: 'text', autocomplete: 'off',
                                'aria-describedby': 'prop-tag-hint'});
      const form = h('form', {class: 'property-form tags-form', 'aria-label': 'Tags'},
        h('span', {class: 'label'}, 'Tags'),
        h('ul', {class: 'tags editable'}, t.tags.map((tag) => h('li', null, tag,
          h('button', {type: 'button', class: 'remove-tag', 'aria-label': `Remove tag ${tag}`,
                       onclick: () => command(form, 'tags', {remove: [tag]},
                         `Tag ${tag} removed`)}, '\u00d7')))),
        h('label', {for: 'prop-tag', class: 'secondary'}, 'Add a tag'), input,
        h('span', {id: 'prop-tag-hint', class: 'hint'}, 'lower-case letters, digits, - and _'),
        h('button', {type: 'submit'}, 'Add tag'));
      form.addEventListener('submit', (e) => {
        e.preventDefault();
        const tag = input.value.trim().toLowerCase();
        if (!tag) {
          showProblem(problems, {problem: {title: 'No tag', detail: 'Write the tag to add.'}});
          input.focus();
          return;
        }
        command(form, 'tags', {add: [tag]}, `Tag ${tag} added`);
      });
      forms.push(form);
    } else {
      forms.push(h('dl', null, readOnly('Tags', t.tags.join(', ') || 'none')));
    }
    return forms;
  }

  /** The group and the assignee, changed together: the API refuses an assignee who is
   * not a member of the group (409 not_group_member), which the page shows as said. */
  function assignForm(t) {
    // A role that may not read the groups changes the assignee only.
    const groups = may('GET /v1/groups');
    const agents = app.directory.activeAgents();
    const group = groups ? h('select', {id: 'prop-group', name: 'group'},
      h('option', {value: '', selected: !t.group_id}, 'No group'),
      app.directory.groupList().map((g) => h('option', {value: g.id, selected: g.id === t.group_id},
        g.name)),
      t.group_id && !app.directory.groups.has(t.group_id)
        ? h('option', {value: t.group_id, selected: true}, app.directory.groupName(t.group_id))
        : null) : null;
    const select = h('select', {id: 'prop-assignee', name: 'assignee'},
      h('option', {value: '', selected: !t.assignee}, 'Unassigned'),
      agents.map((a) => h('option', {value: a.id, selected: a.id === t.assignee}, a.name)),
      t.assignee && !agents.some((a) => a.id === t.assignee)
        ? h('option', {value: t.assignee, selected: true}, app.directory.agentName(t.assignee))
        : null);
    const form = h('form', {class: 'property-form', 'aria-label': 'Assign the ticket'},
      group ? [h('label', {for: 'prop-group'}, 'Group'), group] : null,
      h('label', {for: 'prop-assignee'}, 'Assignee'), select,
      h('button', {type: 'submit'}, 'Assign'));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const who = select.value ? `Assigned to ${app.directory.agentName(select.value)}`
        : 'Unassigned';
      command(form, 'assignee', {agent_id: select.value || null,
                                 ...(group ? {group_id: group.value || null} : {})},
        group ? `${who} in ${app.directory.groupName(group.value || null)}` : who);
    });
    return form;
  }

  /** The ticket's field values: a control per field the tenant defines (active ones,
   * and any other the ticket holds a value of); only the changed values are sent. */
  function fieldsForm(t) {
    const values = t.fields ?? {};
    const shown = app.directory.fields.filter((f) => f.active || values[f.key] !== undefined);
    if (!shown.length) {
      const keys = Object.keys(values);
      return keys.length ? h('dl', null, keys.map((k) => h('div', {class: 'property'},
        h('dt', null, k), h('dd', null, fieldText(null, values[k]))))) : h('p', {class: 'help'},
        'This tenant defines no ticket fields.');
    }
    if (!may('POST /v1/tickets/{ticket_id}/fields') || t.state === 'closed') {
      return h('dl', null, shown.map((f) => h('div', {class: 'property'},
        h('dt', null, f.title), h('dd', null, fieldText(f, values[f.key])))));
    }
    const controls = shown.map((f) => fieldControl(f, values[f.key]));
    const form = h('form', {class: 'property-form fields-form', 'aria-label': 'Ticket fields'},
      controls.map((c) => c.element), h('button', {type: 'submit'}, 'Save fields'));
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const changed = {};
      for (const c of controls) {
        const value = c.value();
        if (JSON.stringify(value) !== JSON.stringify(values[c.key] ?? null)) changed[c.key] = value;
      }
      if (!Object.keys(changed).length) {
        showProblem(problems, {problem: {title: 'Nothing changed',
          detail: 'Change a field\u2019s value first.'}});
        return;
      }
      command(form, 'fields', {fields: changed},
        `Fields saved: ${Object.keys(changed).map((k) => app.directory.fieldTitle(k)).join(', ')}`);
    });
    return form;
  }

  // -- splitting messages off to a new ticket ---------------------------------------

  /** The Split control: a button opens a form listing the ticket's own messages with a
   * checkbox each; confirming moves the chosen ones to a new ticket, which opens. */
  function splitPanel() {
    const list = h('ul', {class: 'split-messages'});
    const subject = h('input', {id: 'split-subject', name: 'subject', autocomplete: 'off',
                                maxlength: 500});
    const confirm = h('button', {type: 'submit', class: 'primary'}, 'Move to a new ticket');
    const cancel = h('button', {type: 'button'}, 'Cancel');
    const form = h('form', {class: 'split-form', 'aria-label': 'Split the ticket', hidden: true},
      h('fieldset', null, h('legend', null, 'Messages to move'), list),
      h('label', {for: 'split-subject'}, 'Subject of the new ticket'), subject,
      h('p', {class: 'help'}, 'The new ticket takes this ticket\u2019s requester, group, ' +
        'priority, tags and fields; the chosen messages leave this conversation.'),
      h('div', {class: 'form-actions'}, confirm, cancel));
    const open = h('button', {type: 'button', class: 'split-open'}, 'Split\u2026');
    const element = h('section', {class: 'split', 'aria-label': 'Split'}, open, form);
    open.addEventListener('click', () => {
      form.hidden = false;
      open.hidden = true;
      subject.value = ticket?.subject ?? '';
      list.querySelector('input')?.focus();
    });
    cancel.addEventListener('click', () => {
      form.hidden = true;
      open.hidden = false;
    });
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      clearProblem(problems);
      const chosen = [...list.querySelectorAll('input:checked')].map((b) => b.value);
      if (!chosen.length) {
        showProblem(problems, {problem: {title: 'No message chosen',
          detail: 'Tick the messages to move to the new ticket.'}});
        return;
      }
      try {
        const answer = await busy(form, () => app.api.post(`/v1/tickets/${id}/split`,
          {message_ids: chosen, subject: subject.value.trim() || null},
          {ifMatch: ticket.version, idempotencyKey: newIdempotencyKey()}));
        announce(`${chosen.length} message${chosen.length === 1 ? '' : 's'} moved`);
        app.navigate(`#/tickets/${answer.body.new_ticket.id}`);
      } catch (error) {
        if (error.status === 412) {
          await conflict(ticket, error);
          return;
        }
        showProblem(problems, error, 'The ticket was not split');
      }
    });
    return {
      element,
      update(t) {
        element.hidden = t.state === 'closed' || Boolean(t.merged_into);
      },
      messages(all) {
        // Only messages written on this ticket move (not those of tickets merged in).
        const own = all.filter((m) => m.ticket_id === id);
        fill(list, own.map((m) => h('li', null, h('label', {class: 'check'},
          h('input', {type: 'checkbox', name: 'message', value: m.id}),
          `${m.visibility === 'internal' ? 'Internal note' : 'Message'} by ` +
          `${app.directory.author(m.author)}, ${dateTime(m.created_at)}: `,
          h('span', {class: 'split-excerpt'}, m.body.slice(0, 80))))));
      },
    };
  }

  // -- the reply and note form -------------------------------------------------------

  function replyForm() {
    const textarea = h('textarea', {id: 'reply-body', name: 'body', rows: 5, maxlength: 50000,
                                    'aria-describedby': 'reply-hint'});
    const mode = (value, text, checked) => h('label', {class: 'check'},
      h('input', {type: 'radio', name: 'visibility', value, checked}), text);
    const submit = h('button', {type: 'submit', class: 'primary'}, 'Send reply');
    const formProblems = h('div', {class: 'problems', hidden: true});
    const staleBox = h('div', {class: 'notice reply-conflict', hidden: true, tabindex: -1});
    const closedNote = h('p', {class: 'help', hidden: true},
      'This ticket is closed: it takes no more replies. A customer\u2019s new message opens ' +
      'a follow-up ticket.');
    const form = h('form', {class: 'reply', 'aria-labelledby': 'reply-title'},
      h('h3', {id: 'reply-title'}, 'Write'),
      h('fieldset', {class: 'visibility'}, h('legend', null, 'Kind'),
        mode('public', 'Public reply (the customer sees it)', true),
        mode('internal', 'Internal note (agents only)', false)),
      cannedReplies(app, id, textarea),
      h('label', {for: 'reply-body'}, 'Message'), textarea,
      h('p', {id: 'reply-hint', class: 'hint'}, 'Ctrl+Enter sends.'),
      staleBox, formProblems, closedNote, submit);
    const picker = filePicker(app, form);
    submit.before(picker.element);
    // One key per draft: the same text sent again (a double click, a retry after a
    // lost answer) is the same request, which the API answers once.
    let key = null;
    let keyFor = null;
    // The version the draft is written against, and the messages it was written after.
    let base = null;
    let seenIds = new Set();
    const rebase = (version, messagesNow) => {
      base = version;
      seenIds = new Set(messagesNow.map((m) => m.id));
    };
    const showMode = () => {
      const internal = form.elements.visibility.value === 'internal';
      form.classList.toggle('internal-mode', internal);
      submit.textContent = internal ? 'Add internal note' : 'Send reply';
    };
    form.addEventListener('change', () => {
      showMode();
      drafts.save(id, {visibility: form.elements.visibility.value, body: textarea.value});
    });
    // What was written and not sent is kept in this browser, per ticket, until it is
    // sent: leaving the page (or closing the tab) loses nothing.
    const kept = drafts.load(id);
    if (kept?.body) {
      textarea.value = kept.body;
      form.elements.visibility.value = kept.visibility === 'internal' ? 'internal' : 'public';
      showMode();
    }
    textarea.addEventListener('input', () => {
      drafts.save(id, {visibility: form.elements.visibility.value, body: textarea.value});
      typed();
    });
    textarea.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        form.requestSubmit();
      }
    });
    form.addEventListener('submit', async (e) => {
      e.preventDefault();
      if (form.getAttribute('aria-busy')) return;
      clearProblem(formProblems);
      const body = textarea.value;
      const visibility = form.elements.visibility.value;
      if (!body.trim()) {
        showProblem(formProblems, {problem: {title: 'Nothing to send',
          detail: 'Write the message first.'}});
        textarea.focus();
        return;
      }
      const draft = `${visibility}\n${body}`;
      if (keyFor !== draft) {
        key = newIdempotencyKey();
        keyFor = draft;
      }
      try {
        const answer = await busy(form, async () => {
          const attachments = await picker.upload();
          return app.api.post(`/v1/tickets/${id}/messages`,
            attachments.length ? {body, visibility, attachments} : {body, visibility},
            {idempotencyKey: key, ifMatch: base});
        });
        textarea.value = '';
        drafts.save(id, null);
        keyFor = null;
        picker.clear();
        staleBox.hidden = true;
        stoppedTyping();
        if (!messages.querySelector(`li[data-id="${answer.body.message.id}"]`)) {
          messages.append(messageItem(app, answer.body.message));
          shown = [...shown, answer.body.message];
          fill(filesBox, ticketFiles(app, shown));
        }
        if (answer.body.ticket.id === id) {
          showTicket(answer.body.ticket);
          rebase(answer.body.ticket.version, shown);
        }
        announce(visibility === 'internal' ? 'Internal note added' : 'Reply sent');
        textarea.focus();
      } catch (error) {
        if (error.status === 412) {
          await stale(error);
          return;
        }
        // The draft and its key stay: sending again cannot post twice.
        showProblem(formProblems, error, 'Not sent');
      }
    });

    /** If-Match failed: the ticket moved on while the draft was written. Nothing was
     * posted, so the next send is a new request (a new key) against the new version. */
    async function stale(error) {
      const before = seenIds;
      await reload();
      if (disposed) return;
      const fresh = shown.filter((m) => !before.has(m.id));
      rebase(ticket.version, shown);
      key = null;
      keyFor = null;
      fill(staleBox,
        h('h2', null, fresh.length ? 'Someone replied meanwhile' : 'The ticket changed meanwhile'),
        h('p', null, 'Your message was not sent: the ticket changed while you wrote it ' +
          `(${error.problem.detail}). Your draft is kept below; read what came in, then ` +
          'send it again (or change it first).'),
        fresh.length ? h('ul', {class: 'stale-messages'}, fresh.map((m) => h('li', null,
          h('strong', null, `${app.directory.author(m.author)}: `),
          m.visibility === 'internal' ? '(internal note) ' : '', m.body))) : null);
      staleBox.hidden = false;
      staleBox.setAttribute('role', 'alert');
      staleBox.focus();
    }

    return {
      element: form,
      /** The page (re)loaded the ticket: an empty box is written against what it shows. */
      rebase(version, messagesNow) {
        if (base === null || !textarea.value.trim()) rebase(version, messagesNow);
      },
      /** The agent's own change moved the ticket from ``from`` to ``to``: a draft begun
       * on ``from`` is not stale for it. */
      movedOn(from, to) {
        if (base === from) base = to;
      },
      write(visibility) {
        form.elements.visibility.value = visibility;
        showMode();
        textarea.focus();
      },
      closed(isClosed) {
        closedNote.hidden = !isClosed;
        submit.disabled = isClosed;
        textarea.disabled = isClosed;
      },
    };
  }

  // -- live ---------------------------------------------------------------------------

  // -- presence ------------------------------------------------------------------------

  const present = new Map(); // agent id -> {name, state}, of everyone but this agent
  const presenceOn = may('WS /v1/stream') && Boolean(app.session.principal?.agent);
  let lastKey = 0;
  let lastTypingSent = 0;

  function showPresence() {
    const people = [...present.values()].sort((a, b) => a.name.localeCompare(b.name));
    presenceBox.hidden = !people.length;
    fill(presenceBox, people.map((p, i) => [i ? ' \u00b7 ' : null,
      h('span', {class: `presence-agent presence-${p.state}`},
        `${p.name} is ${p.state === 'typing' ? 'typing\u2026' : 'viewing'}`)]));
  }

  function onPresence(data) {
    if (data.type === 'presence_list') {
      present.clear();
      for (const p of data.present) present.set(p.agent.id, {name: p.agent.name, state: p.state});
    } else if (data.state === 'gone') {
      present.delete(data.agent.id);
    } else {
      present.set(data.agent.id, {name: data.agent.name, state: data.state});
    }
    showPresence();
  }

  function say(state) {
    if (presenceOn && !disposed) app.feed.present(id, state);
  }

  function typed() {
    lastKey = Date.now();
    if (lastKey - lastTypingSent >= TYPING_EVERY_MS) {
      lastTypingSent = lastKey;
      say('typing');
    }
  }

  function stoppedTyping() {
    lastKey = 0;
    lastTypingSent = 0;
    say('viewing');
  }

  say('viewing');
  const refresher = presenceOn ? setInterval(() => {
    say(Date.now() - lastKey < TYPING_RECENT_MS ? 'typing' : 'viewing');
  }, PRESENCE_REFRESH_MS) : null;

  let live = false;
  const stop = may('WS /v1/stream') ? app.feed.subscribe(`ticket:${id}`, {
    onPresence,
    onLive: ({resumed}) => {
      live = true;
      // Who is here comes right behind (a presence_list), or nobody is.
      present.clear();
      showPresence();
      if (!resumed) reload();
    },
    onEvent: () => {
      clearTimeout(timer);
      timer = setTimeout(reload, 150);
    },
    onGap: (headSeq) => {
      fill(liveNote, h('p', {class: 'notice', title: `up to event ${headSeq}`},
        'The live feed missed some changes; the ticket was reloaded.'));
      reload();
    },
  }) : null;
  app.directory.load().then(() => { if (ticket && !disposed) showTicket(ticket); },
    (error) => showProblem(problems, error, 'The agents could not be loaded'));
  // Loaded once the ticket's room is live (so no change falls between the load and the
  // feed); without the feed, a moment later all the same.
  const fallback = stop ? setTimeout(() => { if (!live) reload(); }, 1500) : null;
  if (!stop) reload();

  function dispose() {
    if (presenceOn) app.feed.present(id, 'gone');
    clearInterval(refresher);
    disposed = true;
    stop?.();
    clearTimeout(timer);
    clearTimeout(mailTimer);
    clearTimeout(fallback);
  }

  /** r: reply, n: note, a: assign to me, j / k: the next or previous ticket of the
   * queue this page was opened from. */
  function shortcut(key) {
    if ((key === 'r' || key === 'n') && reply) {
      reply.write(key === 'n' ? 'internal' : 'public');
      return true;
    }
    if (key === 'a') {
      const button = properties.querySelector('.assign-me button');
      if (button) button.click();
      return true;
    }
    if ((key === 'j' || key === 'k') && app.lastQueue?.length) {
      const at = app.lastQueue.indexOf(id);
      const next = app.lastQueue[at + (key === 'j' ? 1 : -1)];
      if (next) app.navigate(`#/tickets/${next}`);
      return true;
    }
    return false;
  }

  return {
    element,
    title: 'Ticket',
    dispose,
    shortcut,
    shortcuts: [['r', 'write a public reply'], ['n', 'write an internal note'],
                ['a', 'assign to me'], ['j / k', 'next / previous ticket of the queue'],
                ['Ctrl+Enter', 'send what you wrote']],
  };
}
