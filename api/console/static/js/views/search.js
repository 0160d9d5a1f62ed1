// Search: one box over tickets, contacts and organizations (GET /v1/search), best
// first, each result with its snippet: the matched words marked. The snippet comes as
// escaped text with <mark> around the matches; it is read into text and <mark>
// elements here, never handed to the page as HTML.

import {clearProblem, fill, h, showProblem} from '../dom.js';
import {label} from '../format.js';

const ENTITIES = {amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", '#x27': "'"};

function unescape(text) {
  return text.replace(/&(amp|lt|gt|quot|#39|#x27);/g, (_, name) => ENTITIES[name]);
}

/** A snippet as text and <mark> elements. */
export function snippet(html) {
  const parts = String(html ?? '').split(/<mark>(.*?)<\/mark>/s);
  return parts.map((part, i) => (i % 2 ? h('mark', null, unescape(part))
    : unescape(part.replace(/<[^>]*>/g, ''))));
}

function result(app, hit) {
  if (hit.type === 'ticket') {
    const t = hit.ticket;
    return h('li', {class: 'search-hit', dataset: {id: t.id}},
      h('a', {href: `#/tickets/${t.id}`}, t.subject),
      h('span', {class: 'meta'}, ` ${label(t.state)} \u00b7 ${t.requester.email}`),
      h('p', {class: 'snippet'}, snippet(hit.snippet)));
  }
  if (hit.type === 'contact') {
    const c = hit.contact;
    app.directory.rememberContact(c);
    return h('li', {class: 'search-hit', dataset: {id: c.id}},
      h('a', {href: `#/contacts/${c.id}`}, c.name ? `${c.name} <${c.email}>` : c.email),
      h('p', {class: 'snippet'}, snippet(hit.snippet)));
  }
  const o = hit.organization;
  return h('li', {class: 'search-hit', dataset: {id: o.id}},
    h('a', {href: `#/organizations/${o.id}`}, o.name),
    h('p', {class: 'snippet'}, snippet(hit.snippet)));
}

const KINDS = [['ticket', 'Tickets'], ['contact', 'Contacts'], ['organization', 'Organizations']];

export function searchView(app, params) {
  const q = (params.get('q') ?? '').trim();
  const problems = h('div', {class: 'problems', hidden: true});
  const results = h('div', {class: 'search-results', 'aria-live': 'polite'});
  const element = h('section', {class: 'search-page', 'aria-labelledby': 'search-title'},
    h('h1', {id: 'search-title', tabindex: -1}, q ? `Search: ${q}` : 'Search'),
    problems, results);

  async function load() {
    clearProblem(problems);
    if (!q) {
      fill(results, h('p', {class: 'help'}, 'Write what to look for in the search box.'));
      return;
    }
    fill(results, h('p', {class: 'help'}, 'Searching\u2026'));
    try {
      const sections = await Promise.all(KINDS.map(async ([type, title]) => {
        const page = (await app.api.get('/v1/search', {q, type, limit: 10})).body;
        return page.data.length ? h('section', {class: 'search-kind'},
          h('h2', null, title), h('ol', {class: 'search-list'},
            page.data.map((hit) => result(app, hit)))) : null;
      }));
      const found = sections.filter(Boolean);
      fill(results, found.length ? found
        : h('p', {class: 'help'}, `Nothing matches \u201c${q}\u201d.`));
    } catch (error) {
      fill(results);
      showProblem(problems, error, 'The search did not run');
    }
  }
  load();
  return {element, title: q ? `Search: ${q}` : 'Search'};
}

/** The search box of the top bar: it goes to the search page. */
export function searchBox(app) {
  const input = h('input', {id: 'search-q', name: 'q', type: 'search', autocomplete: 'off',
                            placeholder: 'Tickets, contacts, organizations', maxlength: 200});
  const form = h('form', {class: 'search-box', role: 'search', 'aria-label': 'Search'},
    h('label', {for: 'search-q', class: 'visually-hidden'}, 'Search'), input,
    h('button', {type: 'submit'}, 'Search'));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    const q = input.value.trim();
    if (q) app.navigate(`#/search?${new URLSearchParams({q})}`);
  });
  return form;
}
