// A new ticket, as an agent logs it: after a phone call, or from a mail that did not
// come in by itself. The requester is an e-mail (a contact is found or made for it) or
// a contact picked by search; the channel is the source (phone, e-mail, ...), while
// the agent is the author of record, so the ticket reads "logged by" them. Subject,
// body, priority, group and the tenant's ticket fields as /v1/ticket-fields defines
// them. One Idempotency-Key per draft: a double click opens one ticket.

import {newIdempotencyKey} from '../api.js';
import {announce, busy, clearProblem, fill, h, showProblem} from '../dom.js';
import {PRIORITIES, label} from '../format.js';
import {fieldControl} from './ticket.js';

const CHANNELS = ['phone', 'email', 'chat', 'api'];

export function newTicketView(app) {
  if (!app.session.may('POST /v1/tickets')) return app.refusal('New ticket');
  const problems = h('div', {class: 'problems', hidden: true});
  const email = h('input', {id: 'new-email', name: 'email', type: 'email', autocomplete: 'off',
                            spellcheck: 'false', required: true, maxlength: 254,
                            'aria-describedby': 'new-email-hint'});
  const name = h('input', {id: 'new-name', name: 'name', type: 'text', autocomplete: 'off',
                           maxlength: 200});
  const found = h('ul', {class: 'contact-matches', 'aria-label': 'Matching contacts'});
  const subject = h('input', {id: 'new-subject', name: 'subject', type: 'text', required: true,
                              maxlength: 200, autocomplete: 'off'});
  const body = h('textarea', {id: 'new-body', name: 'body', rows: 6, required: true,
                              maxlength: 50000});
  const priority = h('select', {id: 'new-priority', name: 'priority'},
    PRIORITIES.map((p) => h('option', {value: p, selected: p === 'normal'}, label(p))));
  const source = h('select', {id: 'new-source', name: 'source'},
    CHANNELS.map((c) => h('option', {value: c}, label(c))));
  const group = app.session.may('GET /v1/groups')
    ? h('select', {id: 'new-group', name: 'group'}, h('option', {value: ''}, 'No group')) : null;
  const fieldsBox = h('div', {class: 'new-fields'});
  let controls = [];
  let contactId = null;
  const form = h('form', {class: 'new-ticket', 'aria-labelledby': 'new-title', novalidate: true},
    h('fieldset', null, h('legend', null, 'Requester'),
      h('div', {class: 'field'}, h('label', {for: 'new-email'}, 'E-mail'), email,
        h('span', {id: 'new-email-hint', class: 'hint'},
          'A new address makes a new contact; a known one is theirs. Type a name or an '
          + 'address to find a contact.')),
      found,
      h('div', {class: 'field'}, h('label', {for: 'new-name'}, 'Name (optional)'), name)),
    h('div', {class: 'field'}, h('label', {for: 'new-source'}, 'Channel'), source,
      h('span', {class: 'hint'}, 'How the customer reached you; you are recorded as the '
        + 'one who logged it.')),
    h('div', {class: 'field'}, h('label', {for: 'new-subject'}, 'Subject'), subject),
    h('div', {class: 'field'}, h('label', {for: 'new-body'}, 'What the customer said'), body),
    h('div', {class: 'field'}, h('label', {for: 'new-priority'}, 'Priority'), priority),
    group ? h('div', {class: 'field'}, h('label', {for: 'new-group'}, 'Group'), group) : null,
    fieldsBox, problems,
    h('button', {type: 'submit', class: 'primary'}, 'Open ticket'));
  const element = h('section', {class: 'new-ticket-page', 'aria-labelledby': 'new-title'},
    h('p', {class: 'back'}, h('a', {href: '#/queue'}, '\u2190 Queue')),
    h('h1', {id: 'new-title', tabindex: -1}, 'New ticket'), form);

  function drawChoices() {
    if (group) {
      fill(group, h('option', {value: ''}, 'No group'),
        app.directory.groupList().map((g) => h('option', {value: g.id}, g.name)));
    }
    controls = app.directory.fields.filter((f) => f.active).map((f) => fieldControl(f, null));
    fill(fieldsBox, controls.length ? h('fieldset', null, h('legend', null, 'Fields'),
      controls.map((c) => c.element)) : null);
  }

  // Contacts found as the agent types (search), to pick instead of typing it all.
  let searching = null;
  email.addEventListener('input', () => {
    contactId = null;
    clearTimeout(searching);
    const q = email.value.trim();
    if (q.length < 3 || !app.session.may('GET /v1/search')) {
      fill(found);
      return;
    }
    searching = setTimeout(async () => {
      try {
        const page = (await app.api.get('/v1/search', {q, type: 'contact', limit: 5})).body;
        fill(found, page.data.map((hit) => h('li', null, h('button', {type: 'button',
          class: 'quiet', onclick: () => {
            contactId = hit.contact.id;
            email.value = hit.contact.email;
            name.value = hit.contact.name ?? '';
            fill(found);
            subject.focus();
          }}, hit.contact.name ? `${hit.contact.name} <${hit.contact.email}>`
          : hit.contact.email))));
      } catch {
        fill(found); // the form works without suggestions
      }
    }, 250);
  });

  let key = null;
  let keyFor = null;
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    clearProblem(problems);
    const missing = [[email, 'the requester\u2019s e-mail'], [subject, 'a subject'],
                     [body, 'what the customer said']].find(([input]) => !input.value.trim());
    if (missing) {
      showProblem(problems, {problem: {title: 'Check the form',
        detail: `Write ${missing[1]} first.`}});
      missing[0].focus();
      return;
    }
    const fields = {};
    for (const c of controls) {
      const value = c.value();
      if (value !== null && !(Array.isArray(value) && !value.length)) fields[c.key] = value;
    }
    const payload = {
      requester: contactId ? {contact_id: contactId}
        : {email: email.value.trim(), ...(name.value.trim() ? {name: name.value.trim()} : {})},
      subject: subject.value.trim(), body: body.value, priority: priority.value,
      source: source.value,
      ...(group?.value ? {group_id: group.value} : {}),
      ...(Object.keys(fields).length ? {fields} : {}),
    };
    const draft = JSON.stringify(payload);
    if (keyFor !== draft) {
      key = newIdempotencyKey();
      keyFor = draft;
    }
    try {
      const answer = await busy(form, () => app.api.post('/v1/tickets', payload,
        {idempotencyKey: key}));
      announce(`Ticket opened: ${answer.body.subject}`);
      app.navigate(`#/tickets/${answer.body.id}`);
    } catch (error) {
      showProblem(problems, error, 'The ticket was not opened');
    }
  });

  app.directory.load().then(drawChoices,
    (error) => showProblem(problems, error, 'The groups and fields could not be loaded'));
  drawChoices();
  return {element, title: 'New ticket'};
}
