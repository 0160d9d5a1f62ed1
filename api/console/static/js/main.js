// The console's entry point: the session, the API client, the live feed, the drafts,
// the routes (#/queue, #/tickets/new, #/tickets/<id>, #/search?q=, #/contacts,
// #/contacts/<id>, #/organizations/<id>, #/analytics, #/audit, #/admin/<page>,
// #/sign-in) and the
// keyboard shortcuts (listed under "?"). A section the principal's role may not use is
// neither in the navigation nor rendered.

import {Api, now} from './api.js';
import {Directory} from './directory.js';
import {Drafts} from './drafts.js';
import {countdown, relative} from './format.js';
import {fill, h, notFoundPage} from './dom.js';
import {Session} from './session.js';
import {LiveFeed} from './stream.js';
import {adminView} from './views/admin.js';
import {analyticsView} from './views/analytics.js';
import {auditView} from './views/audit.js';
import {contactView, contactsView, organizationView} from './views/people.js';
import {newTicketView} from './views/newticket.js';
import {queueView} from './views/queue.js';
import {searchBox, searchView} from './views/search.js';
import {signInView} from './views/signin.js';
import {ticketView} from './views/ticket.js';

const SECTIONS = [
  {path: 'queue', label: 'Queue', needs: 'GET /v1/tickets', view: queueView},
  // Not where anyone lands: an auditor reads contacts too, but comes for the audit.
  {path: 'contacts', label: 'Contacts', needs: 'GET /v1/contacts', view: contactsView,
   landing: false},
  {path: 'analytics', label: 'Analytics', needs: 'GET /v1/analytics/summary',
   view: analyticsView},
  {path: 'audit', label: 'Audit', needs: 'GET /v1/audit/verify', view: auditView},
  {path: 'admin', label: 'Admin', needs: 'GET /v1/settings', view: adminView, landing: false},
];

const LIVE_TEXT = {
  connecting: 'Connecting to the live feed…', live: 'Live', reconnecting: 'Reconnecting…',
  refused: 'Live feed refused', error: 'Live feed error', off: '',
};

const session = new Session();
const api = new Api(session);
const live = document.getElementById('live');
const feed = new LiveFeed(session, (state, detail) => {
  live.hidden = !LIVE_TEXT[state];
  live.dataset.state = state;
  live.textContent = LIVE_TEXT[state] ?? state;
  live.title = detail ?? '';
});
const directory = new Directory(api, session);
const drafts = new Drafts(session);
const app = {session, api, feed, directory, drafts, navigate, lastQueue: []};
let current = null;

function navigate(hash) {
  if (window.location.hash === hash) render();
  else window.location.hash = hash;
}

function parseRoute() {
  const raw = window.location.hash.replace(/^#\/?/, '');
  const [path, search] = raw.split('?');
  return {parts: path.split('/').filter(Boolean), params: new URLSearchParams(search ?? '')};
}

function home() {
  const first = SECTIONS.find((s) => s.landing !== false && session.may(s.needs))
    ?? SECTIONS.find((s) => session.may(s.needs));
  return first ? `#/${first.path}` : '#/nothing';
}

function renderChrome(active) {
  const nav = document.getElementById('nav');
  fill(nav, session.signedIn ? h('ul', null, SECTIONS.filter((s) => session.may(s.needs))
    .map((s) => h('li', null, h('a', {href: `#/${s.path}`,
                                      'aria-current': s.path === active ? 'page' : null},
    s.label)))) : null);
  const who = document.getElementById('who');
  const p = session.principal;
  fill(who, p ? [h('span', {class: 'who-name'}, session.displayName()),
                 h('span', {class: 'who-role'},
                   ` ${p.role}${session.scoped ? ' (scoped key)' : ''} · ${p.tenant.name}`)]
               : null);
  document.getElementById('sign-out').hidden = !session.signedIn;
  const search = document.getElementById('search');
  if (session.signedIn && session.may('GET /v1/search')) {
    if (!search.firstChild) fill(search, searchBox(app));
    search.hidden = false;
  } else {
    fill(search);
    search.hidden = true;
  }
}

function render() {
  current?.dispose?.();
  current = null;
  const main = document.getElementById('main');
  const {parts, params} = parseRoute();
  if (!session.signedIn) {
    renderChrome(null);
    current = signInView(app, () => navigate(home()));
    fill(main, current.element);
    current.focus?.();
    return;
  }
  const [section, id] = parts;
  let view;
  if (section === 'tickets' && id === 'new') {
    view = newTicketView(app);
  } else if (section === 'tickets' && id) {
    view = ticketView(app, id);
  } else if (section === 'admin' && id && session.may('GET /v1/settings')) {
    view = adminView(app, params, id);
  } else if (section === 'search' && session.may('GET /v1/search')) {
    view = searchView(app, params);
  } else if (section === 'contacts' && id) {
    view = contactView(app, id);
  } else if (section === 'organizations' && id) {
    view = organizationView(app, id);
  } else {
    const match = SECTIONS.find((s) => s.path === section);
    if (!match && section && section !== 'nothing') {
      view = {element: notFoundPage('Page', `The console has no page at #/${parts.join('/')}.`,
        h('a', {href: home()}, 'Back to the start')), title: 'Not found'};
    } else if (!match) {
      if (section !== 'nothing' && home() !== '#/nothing') {
        window.location.replace(home());
        return;
      }
      view = {element: h('section', null, h('h1', {tabindex: -1}, 'Nothing to show'),
        h('p', null, session.scoped
          ? 'The scopes of this key allow no section of this console.'
          : `The ${session.principal.role} role has no section in this console.`))};
    } else if (!session.may(match.needs)) {
      view = refusal(match.label);
    } else {
      view = match.view(app, params);
    }
  }
  renderChrome(section);
  // The queue's order is remembered for the ticket page's j and k.
  if (current?.order) app.lastQueue = current.order();
  current = view;
  fill(main, view.element);
  document.title = `${view.title ?? 'Helpdesk'} · Helpdesk console`;
  // Move focus to the new page's heading, so keyboard and screen reader users land
  // on it (a hash change alone leaves focus where the link was).
  (main.querySelector('h1') ?? main).focus({preventScroll: false});
}

/** The keyboard shortcuts of the page shown, and the console's own, as a list. */
function shortcutsHelp() {
  const rows = [['?', 'show or hide this list'], ['/', 'search'],
                ...(current?.shortcuts ?? [])];
  const dialog = h('div', {class: 'shortcuts', role: 'dialog', 'aria-modal': 'false',
                           'aria-labelledby': 'shortcuts-title', tabindex: -1},
    h('h2', {id: 'shortcuts-title'}, 'Keyboard shortcuts'),
    h('dl', null, rows.map(([key, what]) => h('div', {class: 'shortcut'},
      h('dt', null, h('kbd', null, key)), h('dd', null, what)))),
    h('button', {type: 'button', onclick: () => dialog.remove()}, 'Close'));
  return dialog;
}

function typing(target) {
  return target instanceof HTMLElement && (target.isContentEditable
    || ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName));
}

document.addEventListener('keydown', (event) => {
  if (!session.signedIn || event.ctrlKey || event.metaKey || event.altKey) return;
  if (event.key === 'Escape') {
    document.querySelector('.shortcuts')?.remove();
    return;
  }
  if (typing(event.target)) return;
  if (event.key === '?') {
    const open = document.querySelector('.shortcuts');
    if (open) {
      open.remove();
    } else {
      const dialog = shortcutsHelp();
      document.body.append(dialog);
      dialog.focus();
    }
    event.preventDefault();
    return;
  }
  if (event.key === '/') {
    const box = document.getElementById('search-q');
    if (box) {
      event.preventDefault();
      box.focus();
    }
    return;
  }
  if (current?.shortcut?.(event.key)) event.preventDefault();
});

/** What a caller sees for a section its permissions do not allow. */
function refusal(what) {
  return {element: h('section', {class: 'refusal'},
    h('h1', {tabindex: -1}, what),
    h('p', {class: 'problem', role: 'alert'},
      session.scoped ? 'The scopes of this key do not allow this. '
        : `Your role (${session.principal.role}) may not use this. `,
      h('a', {href: home()}, 'Back to what you may use'), '.'))};
}
app.refusal = refusal;

/** One clock for the page: every [data-due] element counts down (or up once past
 * due), every [data-relative] says how long ago. */
function tick() {
  const t = now();
  for (const el of document.querySelectorAll('[data-due]')) {
    const left = new Date(el.dataset.due).getTime() - t;
    el.textContent = left >= 0 ? `due in ${countdown(left)}` : `overdue by ${countdown(left)}`;
    el.classList.toggle('overdue', left < 0);
  }
  for (const el of document.querySelectorAll('[data-relative]')) {
    el.textContent = relative(el.dataset.relative, t);
  }
}

document.getElementById('sign-out').addEventListener('click', () => session.signOut());
document.getElementById('skip-link').addEventListener('click', (event) => {
  event.preventDefault(); // the hash is the router's: focus the content instead
  document.getElementById('main').focus();
});
session.onChange(() => {
  if (!session.signedIn) {
    feed.stop();
    directory.reset();
  }
  render();
});
window.addEventListener('hashchange', render);
setInterval(tick, 1000);

(async () => {
  if (!await session.adoptRedirect(api).catch(() => false)) await session.restore(api);
  if (session.signedIn && !window.location.hash) window.location.replace(home());
  render();
})();
