// The people tickets come from: the contacts list (newest first, or the one contact with
// an e-mail), a contact with their tickets (GET /v1/contacts/{id}/tickets), and an
// organization with its contacts and their tickets. Every list pages with "Load more"
// along next_cursor, as the queue does. A role that may change contacts (organizations)
// edits them here with If-Match: a refusal (412 someone else changed it, 409 a name or
// domain taken, 422 a value refused) is shown with its title and detail.

import {newIdempotencyKey} from '../api.js';
import {announce, busy, clearProblem, fill, h, showProblem} from '../dom.js';
import {shortId} from '../format.js';
import {ticketItem} from './queue.js';

const PAGE = 20;

/** A list read page by page from ``path``: ``item`` shows a row; ``empty`` is said when
 * there is none. Answers the element and a ``load()`` that starts it over. */
function pagedList(app, {path, params, item, empty, label, problems}) {
  let cursor = null;
  let generation = 0;
  const list = h('ol', {class: 'ticket-list', 'aria-label': label});
  const more = h('button', {type: 'button', class: 'load-more', hidden: true,
                            onclick: () => page(false)}, 'Load more');
  const end = h('p', {class: 'list-end', hidden: true});

  async function page(first) {
    const mine = first ? ++generation : generation;
    clearProblem(problems);
    more.disabled = true;
    try {
      const answer = (await app.api.get(path, {...params(), limit: PAGE,
                                               cursor: first ? null : cursor})).body;
      if (mine !== generation) return;
      if (first) list.replaceChildren();
      const start = list.children.length;
      answer.data.forEach((row) => list.append(item(row)));
      cursor = answer.next_cursor;
      more.hidden = !cursor;
      end.hidden = Boolean(cursor);
      fill(end, list.children.length ? 'No more.' : empty);
      if (!first) list.children[start]?.querySelector('a')?.focus();
    } catch (error) {
      showProblem(problems, error, `${label} could not be loaded`);
    } finally {
      more.disabled = false;
    }
  }

  return {element: h('div', {class: 'paged'}, list, more, end), load: () => page(true)};
}

function contactItem(app, c) {
  app.directory.rememberContact(c);
  return h('li', {class: 'ticket-item contact-item', dataset: {id: c.id}},
    h('article', {'aria-labelledby': `c-${c.id}`},
      h('h2', {class: 'ticket-subject'},
        h('a', {id: `c-${c.id}`, href: `#/contacts/${c.id}`}, c.name ?? c.email)),
      h('p', {class: 'meta'},
        h('span', null, c.email),
        c.organization_id ? h('span', null, app.directory.organizationName(c.organization_id))
          : null,
        c.tags.length ? h('span', null, c.tags.join(', ')) : null)));
}

function details(rows) {
  return h('dl', {class: 'details'}, rows.filter(([, v]) => v !== null && v !== undefined && v !== '')
    .map(([name, value]) => h('div', {class: 'property'}, h('dt', null, name), h('dd', null, value))));
}

/** Tags or domains as typed: commas or spaces between them. */
function words(text) {
  return text.split(/[\s,]+/).map((w) => w.trim()).filter(Boolean);
}

function sameSet(typed, held) {
  const norm = (list) => JSON.stringify([...new Set(list.map((v) => v.toLowerCase()))].sort());
  return norm(typed) === norm(held);
}

/** A labelled input in a .field: the label above, an optional hint tied to it. */
function field(id, text, input, hint) {
  if (hint) input.setAttribute('aria-describedby', `${id}-hint`);
  return h('div', {class: 'field'}, h('label', {for: id}, text), input,
    hint ? h('span', {id: `${id}-hint`, class: 'hint'}, hint) : null);
}

/** The input names a refusal blames: a domain rule's ``field``, or a handler's
 * ``errors[].loc`` (["body", "organization_id"]). */
function blamed(error) {
  const p = error?.problem ?? {};
  const names = (Array.isArray(p.errors) ? p.errors : []).map((e) => (e.loc ?? []).at(-1));
  return [p.field, ...names].filter(Boolean).map((n) => String(n).split('.')[0]);
}

/** An edit form of a record the page shows. ``record()`` is the record as last read
 * (its ``version`` goes in If-Match); ``inputs`` pairs each input with the text it
 * shows of a record; ``changes()`` is the body to send (empty: nothing changed);
 * ``send(body, version)`` is the PATCH; ``read()`` reads the record again; ``show``
 * draws a record on the page and ``done(answer)`` says what a save did. After a 412
 * the record is read again and shown as it is now: inputs nobody typed in take its
 * values, and what was typed stays, so saving again applies it and nothing else. */
function editForm({label, controls, inputs, record, changes, send, read, show, done}) {
  const problems = h('div', {class: 'problems', hidden: true});
  const status = h('p', {class: 'saved', role: 'status'});
  const form = h('form', {class: 'edit-form', 'aria-label': label, novalidate: true},
    controls, problems, h('button', {type: 'submit', class: 'primary'}, 'Save'), status);
  const put = (now, before) => {
    for (const {input, of} of inputs) {
      if (!before || input.value === of(before)) input.value = of(now);
    }
  };
  form.addEventListener('submit', async (e) => {
    e.preventDefault();
    if (form.getAttribute('aria-busy')) return;
    clearProblem(problems);
    fill(status);
    form.querySelectorAll('[aria-invalid]').forEach((c) => c.removeAttribute('aria-invalid'));
    const body = changes();
    if (!Object.keys(body).length) {
      showProblem(problems, {problem: {title: 'Nothing changed',
        detail: 'Change a value first.'}});
      return;
    }
    const before = record();
    try {
      const answer = await busy(form, () => send(body, before.version));
      show(answer.body);
      put(answer.body);
      fill(status, done(answer.body));
      announce(status.textContent);
    } catch (error) {
      showProblem(problems, error, 'The change was not made');
      for (const name of blamed(error)) {
        form.querySelector(`[name="${name}"]`)?.setAttribute('aria-invalid', 'true');
      }
      if (error.status !== 412) return;
      try {
        const now = await read();
        show(now);
        put(now, before);
        problems.firstChild.append(h('p', {class: 'conflict-note'},
          'Someone else changed it after this page read it: it is shown above as it is ' +
          'now. What you typed is still in the form; save again to apply it.'));
      } catch (loadError) {
        showProblem(problems, loadError, 'It could not be read again');
      }
    }
  });
  return form;
}

/** A contact's name, phone, tags and organization, changed with If-Match. */
function contactForm(app, id, record, show) {
  const c = record();
  const name = h('input', {id: 'edit-contact-name', name: 'name', type: 'text',
                           autocomplete: 'off'});
  const phone = h('input', {id: 'edit-contact-phone', name: 'phone', type: 'tel',
                            autocomplete: 'off'});
  const tags = h('input', {id: 'edit-contact-tags', name: 'tags', type: 'text',
                           autocomplete: 'off', spellcheck: 'false'});
  const organizations = app.directory.organizationList();
  const organization = h('select', {id: 'edit-contact-organization', name: 'organization_id'},
    h('option', {value: ''}, 'No organization'),
    organizations.map((o) => h('option', {value: o.id}, o.name)),
    c.organization_id && !organizations.some((o) => o.id === c.organization_id)
      ? h('option', {value: c.organization_id},
        app.directory.organizationName(c.organization_id)) : null);
  const inputs = [
    {input: name, of: (r) => r.name ?? ''},
    {input: phone, of: (r) => r.phone ?? ''},
    {input: tags, of: (r) => r.tags.join(', ')},
    {input: organization, of: (r) => r.organization_id ?? ''},
  ];
  inputs.forEach(({input, of}) => { input.value = of(c); });
  const text = (input) => input.value.trim() || null;
  return editForm({
    label: 'Edit the contact',
    controls: [
      field('edit-contact-name', 'Name', name),
      field('edit-contact-phone', 'Phone', phone),
      field('edit-contact-tags', 'Tags', tags,
        'separated by commas: lower-case letters, digits, - and _'),
      field('edit-contact-organization', 'Organization', organization),
    ],
    inputs,
    record,
    changes: () => {
      const now = record();
      const out = {};
      if (text(name) !== (now.name ?? null)) out.name = text(name);
      if (text(phone) !== (now.phone ?? null)) out.phone = text(phone);
      if (!sameSet(words(tags.value), now.tags)) out.tags = words(tags.value);
      if ((organization.value || null) !== (now.organization_id ?? null)) {
        out.organization_id = organization.value || null;
      }
      return out;
    },
    send: (body, version) => app.api.patch(`/v1/contacts/${id}`, body,
      {ifMatch: version, idempotencyKey: newIdempotencyKey()}),
    read: async () => (await app.api.get(`/v1/contacts/${id}`)).body,
    show,
    done: (now) => `Saved: the contact is at version ${now.version}.`,
  });
}

/** An organization's name and domains, changed with If-Match; whether its contacts
 * move with a change of domains is chosen, never assumed. */
function organizationForm(app, id, record, show, moved) {
  const name = h('input', {id: 'edit-org-name', name: 'name', type: 'text',
                           autocomplete: 'off'});
  const domains = h('input', {id: 'edit-org-domains', name: 'domains', type: 'text',
                              autocomplete: 'off', spellcheck: 'false'});
  const inputs = [{input: name, of: (r) => r.name},
                  {input: domains, of: (r) => r.domains.join(', ')}];
  inputs.forEach(({input, of}) => { input.value = of(record()); });
  const choice = (value, text, checked) => h('label', {class: 'check'},
    h('input', {type: 'radio', name: 'move_contacts', value, checked}), text);
  const move = h('fieldset', {class: 'move-choice'},
    h('legend', null, 'When the domains change, existing contacts'),
    choice('false', 'stay where they are (only new contacts follow the domains)', true),
    choice('true', 'move: contacts of a domain it gains join it, and its contacts of a ' +
      'domain it gives up leave it', false));
  return editForm({
    label: 'Edit the organization',
    controls: [
      field('edit-org-name', 'Name', name),
      field('edit-org-domains', 'Domains', domains, 'e-mail domains, separated by commas'),
      move,
    ],
    inputs,
    record,
    changes: () => {
      const now = record();
      const out = {};
      if (name.value.trim() !== now.name) out.name = name.value.trim();
      if (!sameSet(words(domains.value), now.domains)) {
        out.domains = words(domains.value);
        out.move_contacts = move.querySelector('input:checked')?.value === 'true';
      }
      return out;
    },
    send: (body, version) => app.api.patch(`/v1/organizations/${id}`, body,
      {ifMatch: version, idempotencyKey: newIdempotencyKey()}),
    read: async () => (await app.api.get(`/v1/organizations/${id}`)).body,
    show,
    done: (now) => {
      const n = now.contacts_moved;
      if (n) moved();
      return `Saved: the organization is at version ${now.version}; ${n} contact${
        n === 1 ? '' : 's'} moved.`;
    },
  });
}

/** #/contacts: the tenant's contacts, newest first, or the one with an e-mail. */
export function contactsView(app, params) {
  const problems = h('div', {class: 'problems', hidden: true});
  const email = h('input', {id: 'contact-email', name: 'email', type: 'email',
                            value: params.get('email') ?? '', autocomplete: 'off',
                            spellcheck: 'false', 'aria-describedby': 'contact-email-hint'});
  const rows = pagedList(app, {
    path: '/v1/contacts', params: () => ({email: email.value.trim()}),
    item: (c) => contactItem(app, c), label: 'Contacts', problems,
    empty: 'No contact has this e-mail.'});
  const form = h('form', {class: 'range', role: 'search', 'aria-label': 'Find a contact'},
    h('div', {class: 'field'}, h('label', {for: 'contact-email'}, 'E-mail'), email,
      h('span', {id: 'contact-email-hint', class: 'hint'}, 'the whole address, in any case')),
    h('button', {type: 'submit'}, 'Find'),
    h('button', {type: 'button', class: 'quiet', onclick: () => {
      email.value = '';
      form.requestSubmit();
    }}, 'All contacts'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const value = email.value.trim();
    window.history.replaceState(null, '', `#/contacts${value
      ? `?email=${encodeURIComponent(value)}` : ''}`);
    rows.load();
  });
  const element = h('section', {class: 'people', 'aria-labelledby': 'contacts-title'},
    h('h1', {id: 'contacts-title', tabindex: -1}, 'Contacts'),
    h('p', {class: 'help'}, 'The people tickets come from, newest first.'),
    form, problems, rows.element);
  app.directory.load().catch((error) => showProblem(problems, error,
    'The organizations could not be loaded'));
  rows.load();
  return {element, title: 'Contacts'};
}

/** #/contacts/<id>: a contact and their tickets. */
export function contactView(app, id) {
  if (!app.session.may('GET /v1/contacts/{contact_id}')) return app.refusal('Contact');
  const {problems, title, about, edit, tickets} = recordParts(
    app, 'contact', `Contact ${shortId(id)}`, `/v1/contacts/${id}/tickets`,
    'Tickets of this contact');
  const element = h('section', {class: 'people', 'aria-labelledby': 'contact-title'},
    backLink(app), title, problems, about, edit,
    h('section', {'aria-labelledby': 'contact-tickets'},
      h('h2', {id: 'contact-tickets'}, 'Tickets, newest first'), tickets.element));
  let contact = null;
  function show(c) {
    contact = c;
    app.directory.rememberContact(c);
    fill(title, c.name ?? c.email);
    document.title = `${c.name ?? c.email} · Helpdesk console`;
    fill(about, details([
      ['E-mail', c.email], ['Name', c.name], ['Phone', c.phone],
      ['Organization', c.organization_id ? organizationLink(app, c.organization_id) : 'none'],
      ['Tags', c.tags.join(', ') || 'none'], ['Version', String(c.version)],
    ]), app.session.may('GET /v1/tickets')
      ? h('p', null, h('a', {href: `#/queue?requester_id=${c.id}`},
        'Filter the queue by this requester')) : null);
  }
  (async () => {
    try {
      await app.directory.load().catch(() => {});
      show((await app.api.get(`/v1/contacts/${id}`)).body);
      if (app.session.may('PATCH /v1/contacts/{contact_id}')) {
        fill(edit, h('section', {class: 'panel', 'aria-labelledby': 'contact-edit'},
          h('h2', {id: 'contact-edit'}, 'Edit the contact'),
          contactForm(app, id, () => contact, show)));
      }
    } catch (error) {
      showProblem(problems, error, 'The contact could not be loaded');
    }
  })();
  tickets.load();
  return {element, title: 'Contact'};
}

function organizationLink(app, id) {
  return app.session.may('GET /v1/organizations/{organization_id}')
    ? h('a', {href: `#/organizations/${id}`}, app.directory.organizationName(id))
    : app.directory.organizationName(id);
}

/** What a contact's and an organization's pages both hold: a place for problems, the
 * title (`<kind>-title`, named by its short id until the record is read), the panes
 * that show and edit it, and the list of its tickets. */
function recordParts(app, kind, name, ticketsPath, ticketsLabel) {
  const problems = h('div', {class: 'problems', hidden: true});
  return {
    problems,
    title: h('h1', {id: `${kind}-title`, tabindex: -1}, name),
    about: h('div', {class: 'about'}),
    edit: h('div', {class: 'edit'}),
    tickets: pagedList(app, {
      path: ticketsPath, params: () => ({}), item: (t) => ticketItem(app, t),
      label: ticketsLabel, problems, empty: 'No tickets.'}),
  };
}

function backLink(app) {
  return app.session.may('GET /v1/contacts')
    ? h('p', {class: 'back'}, h('a', {href: '#/contacts'}, '\u2190 Contacts')) : null;
}

/** #/organizations/<id>: an organization, its contacts and their tickets. */
export function organizationView(app, id) {
  if (!app.session.may('GET /v1/organizations/{organization_id}')) {
    return app.refusal('Organization');
  }
  const {problems, title, about, edit, tickets} = recordParts(
    app, 'organization', `Organization ${shortId(id)}`, `/v1/organizations/${id}/tickets`,
    'Tickets of its contacts');
  const contacts = app.session.may('GET /v1/contacts') ? pagedList(app, {
    path: '/v1/contacts', params: () => ({organization_id: id}),
    item: (c) => contactItem(app, c), label: 'Its contacts', problems,
    empty: 'No contacts.'}) : null;
  const element = h('section', {class: 'people', 'aria-labelledby': 'organization-title'},
    backLink(app), title, problems, about, edit,
    h('div', {class: 'ticket-grid'},
      h('section', {class: 'ticket-main', 'aria-labelledby': 'organization-tickets'},
        h('h2', {id: 'organization-tickets'}, 'Its contacts\u2019 tickets, newest first'),
        tickets.element),
      contacts ? h('section', {class: 'ticket-side', 'aria-labelledby': 'organization-contacts'},
        h('h2', {id: 'organization-contacts'}, 'Contacts'), contacts.element) : null));
  let organization = null;
  function show(o) {
    organization = o;
    if (app.directory.organizations.has(o.id)) app.directory.organizations.set(o.id, o);
    fill(title, o.name);
    document.title = `${o.name} · Helpdesk console`;
    fill(about, details([['Domains', o.domains.join(', ') || 'none'],
                         ['Version', String(o.version)]]),
      app.session.may('GET /v1/tickets')
        ? h('p', null, h('a', {href: `#/queue?organization_id=${o.id}`},
          'Filter the queue by this organization')) : null);
  }
  (async () => {
    try {
      show((await app.api.get(`/v1/organizations/${id}`)).body);
      if (app.session.may('PATCH /v1/organizations/{organization_id}')) {
        fill(edit, h('section', {class: 'panel', 'aria-labelledby': 'organization-edit'},
          h('h2', {id: 'organization-edit'}, 'Edit the organization'),
          organizationForm(app, id, () => organization, show, () => {
            tickets.load();
            contacts?.load();
          })));
      }
    } catch (error) {
      showProblem(problems, error, 'The organization could not be loaded');
    }
  })();
  app.directory.load().catch(() => {});
  tickets.load();
  contacts?.load();
  return {element, title: 'Organization'};
}
