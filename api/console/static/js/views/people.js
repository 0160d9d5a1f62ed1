// The people tickets come from: the contacts list (newest first, or the one contact with
// an e-mail), a contact with their tickets (GET /v1/contacts/{id}/tickets), and an
// organization with its contacts and their tickets. Every list pages with "Load more"
// along next_cursor, as the queue does.

import {clearProblem, fill, h, showProblem} from '../dom.js';
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
  const problems = h('div', {class: 'problems', hidden: true});
  const title = h('h1', {id: 'contact-title', tabindex: -1}, `Contact ${shortId(id)}`);
  const about = h('div', {class: 'about'});
  const tickets = pagedList(app, {
    path: `/v1/contacts/${id}/tickets`, params: () => ({}),
    item: (t) => ticketItem(app, t), label: 'Tickets of this contact', problems,
    empty: 'No tickets.'});
  const element = h('section', {class: 'people', 'aria-labelledby': 'contact-title'},
    backLink(app), title, problems, about,
    h('section', {'aria-labelledby': 'contact-tickets'},
      h('h2', {id: 'contact-tickets'}, 'Tickets, newest first'), tickets.element));
  (async () => {
    try {
      await app.directory.load().catch(() => {});
      const c = (await app.api.get(`/v1/contacts/${id}`)).body;
      app.directory.rememberContact(c);
      fill(title, c.name ?? c.email);
      document.title = `${c.name ?? c.email} · Helpdesk console`;
      fill(about, details([
        ['E-mail', c.email], ['Name', c.name], ['Phone', c.phone],
        ['Organization', c.organization_id ? organizationLink(app, c.organization_id) : 'none'],
        ['Tags', c.tags.join(', ') || 'none'],
      ]), app.session.may('GET /v1/tickets')
        ? h('p', null, h('a', {href: `#/queue?requester_id=${c.id}`},
          'Filter the queue by this requester')) : null);
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

function backLink(app) {
  return app.session.may('GET /v1/contacts')
    ? h('p', {class: 'back'}, h('a', {href: '#/contacts'}, '\u2190 Contacts')) : null;
}

/** #/organizations/<id>: an organization, its contacts and their tickets. */
export function organizationView(app, id) {
  if (!app.session.may('GET /v1/organizations/{organization_id}')) {
    return app.refusal('Organization');
  }
  const problems = h('div', {class: 'problems', hidden: true});
  const title = h('h1', {id: 'organization-title', tabindex: -1},
    `Organization ${shortId(id)}`);
  const about = h('div', {class: 'about'});
  const tickets = pagedList(app, {
    path: `/v1/organizations/${id}/tickets`, params: () => ({}),
    item: (t) => ticketItem(app, t), label: 'Tickets of its contacts', problems,
    empty: 'No tickets.'});
  const contacts = app.session.may('GET /v1/contacts') ? pagedList(app, {
    path: '/v1/contacts', params: () => ({organization_id: id}),
    item: (c) => contactItem(app, c), label: 'Its contacts', problems,
    empty: 'No contacts.'}) : null;
  const element = h('section', {class: 'people', 'aria-labelledby': 'organization-title'},
    backLink(app), title, problems, about,
    h('div', {class: 'ticket-grid'},
      h('section', {class: 'ticket-main', 'aria-labelledby': 'organization-tickets'},
        h('h2', {id: 'organization-tickets'}, 'Its contacts\u2019 tickets, newest first'),
        tickets.element),
      contacts ? h('section', {class: 'ticket-side', 'aria-labelledby': 'organization-contacts'},
        h('h2', {id: 'organization-contacts'}, 'Contacts'), contacts.element) : null));
  (async () => {
    try {
      const o = (await app.api.get(`/v1/organizations/${id}`)).body;
      fill(title, o.name);
      document.title = `${o.name} · Helpdesk console`;
      fill(about, details([['Domains', o.domains.join(', ') || 'none']]),
        app.session.may('GET /v1/tickets')
          ? h('p', null, h('a', {href: `#/queue?organization_id=${o.id}`},
            'Filter the queue by this organization')) : null);
    } catch (error) {
      showProblem(problems, error, 'The organization could not be loaded');
    }
  })();
  app.directory.load().catch(() => {});
  tickets.load();
  contacts?.load();
  return {element, title: 'Organization'};
}
