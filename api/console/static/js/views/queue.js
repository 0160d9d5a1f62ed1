// The queue: tickets newest first or by SLA due time, filtered, a page at a time
// ("Load more" follows next_cursor; there are no page numbers and no totals, as the
// API has none), kept current by the live feed: new tickets appear in their place,
// changed ones change in place, and a gap reloads the page and says so. "My tickets",
// "Unassigned" and "My groups" are filters too (assignee=me, assignee=none,
// group_id=mine, each of the active states). Tickets can be selected for the bulk
// actions of bulk.js. With a moment in the address (asof.js) the queue is the desk as
// it stood then: read-only, no live changes, no commands.

import {asOfPicker, pastBanner, readMoment} from './asof.js';
import {savedViewsNav} from './automation.js';
import {announce, clearProblem, fill, h, showProblem} from '../dom.js';
import {ACTIVE_STATES, PRIORITIES, SOURCES, STATES, dateTime, label, relative, shortId}
  from '../format.js';
import {now} from '../api.js';
import {bulkBar} from './bulk.js';
import {nextDue, slaSummary} from './sla.js';

const PAGE = 20;
const LIVE_WAIT_MS = 1500;

/** The list's filters: each a query parameter of GET /v1/tickets, with how to show it
 * and how to tell whether a ticket that changed live now matches it (``test`` may
 * answer a promise: a ticket's organization is its contact's, read when needed). The
 * requester filter has no control of its own: a contact's page links here with it, and
 * the form shows it with a way to remove it. */
export const FILTERS = [
  {name: 'state', legend: 'State', kind: 'multi', options: () => ['active', ...STATES],
   test: (t, values) => values.includes(t.state)
     || (values.includes('active') && ACTIVE_STATES.includes(t.state))},
  {name: 'priority', legend: 'Priority', kind: 'multi', options: () => PRIORITIES,
   test: (t, values) => values.includes(t.priority)},
  {name: 'source', legend: 'Source', kind: 'multi', options: () => SOURCES,
   test: (t, values) => values.includes(t.source)},
  {name: 'assignee', legend: 'Assignee', kind: 'select',
   options: (app) => [['', 'Anyone'], ...(app.directory.myId() ? [['me', 'Me']] : []),
                      ['none', 'Unassigned'],
                      ...app.directory.activeAgents().map((a) => [a.id, a.name])],
   test: (t, [value], app) => (value === 'none' ? t.assignee === null
     : t.assignee === (value === 'me' ? app.directory.myId() : value))},
  {name: 'tag', legend: 'Tag', kind: 'text', hint: 'one or more, separated by commas',
   test: (t, values) => values.some((v) => t.tags.includes(v))},
  {name: 'group_id', legend: 'Group', kind: 'select', needs: 'GET /v1/groups',
   options: (app) => [['', 'Any group'], ...(app.directory.myId() ? [['mine', 'My groups']] : []),
                      ['none', 'No group'],
                      ...app.directory.groupList().map((g) => [g.id, g.name])],
   test: (t, [value], app) => (value === 'none' ? t.group_id === null
     : value === 'mine' ? app.directory.inMyGroup(t.group_id) : t.group_id === value)},
  {name: 'organization_id', legend: 'Organization', kind: 'select',
   needs: 'GET /v1/organizations',
   options: (app) => [['', 'Any organization'], ['none', 'No organization'],
                      ...app.directory.organizationList().map((o) => [o.id, o.name])],
   test: async (t, [value], app) => {
     const contact = t.requester.contact_id
       ? (await app.api.get(`/v1/contacts/${t.requester.contact_id}`)).body : null;
     const org = contact?.organization_id ?? null;
     return value === 'none' ? org === null : org === value;
   }},
  {name: 'requester_id', legend: 'Requester', kind: 'given',
   describe: (app, [value]) => app.directory.contactLabel(value),
   test: (t, [value]) => (value === 'none' ? t.requester.contact_id === null
     : t.requester.contact_id === value)},
];

/** The filters this role may use (a menu of groups needs the groups). */
function usable(app) {
  return FILTERS.filter((f) => !f.needs || app.session.may(f.needs));
}

function readFilters(params) {
  const out = {};
  for (const filter of FILTERS) {
    const raw = params.get(filter.name);
    if (!raw) continue;
    out[filter.name] = raw.split(',').map((v) => v.trim().toLowerCase()).filter(Boolean);
  }
  return out;
}

function filterQuery(filters) {
  return Object.fromEntries(Object.entries(filters).filter(([, v]) => v.length)
    .map(([name, values]) => [name, values.join(',')]));
}

async function matches(app, ticket, filters) {
  for (const f of FILTERS) {
    if (filters[f.name]?.length && !(await f.test(ticket, filters[f.name], app))) return false;
  }
  return true;
}

function newestFirst(a, b) {
  return b.created_at.localeCompare(a.created_at) || b.id.localeCompare(a.id);
}

/** The API's ``sort=sla_due``: the next deadline soonest first, no running clock last,
 * then by id. */
function dueFirst(a, b) {
  const [x, y] = [nextDue(a), nextDue(b)];
  return (x === y ? 0 : x < y ? -1 : 1) || a.id.localeCompare(b.id);
}

export const SORTS = {created: ['Newest first', newestFirst], sla_due: ['SLA due soonest', dueFirst]};

/** The ready-made queues of an agent's day: each a set of filters. */
const QUEUES = [
  {name: 'All tickets', filters: {}},
  {name: 'My tickets', filters: {assignee: ['me'], state: ['active']}, agent: true},
  {name: 'Unassigned', filters: {assignee: ['none'], state: ['active']}},
  {name: 'My groups', filters: {group_id: ['mine'], state: ['active']}, agent: true,
   needs: 'GET /v1/groups'},
];

function sameFilters(a, b) {
  const keys = new Set([...Object.keys(a), ...Object.keys(b)]);
  return [...keys].every((k) => (a[k] ?? []).join(',') === (b[k] ?? []).join(','));
}

function filterForm(app, filters, apply) {
  const controls = usable(app).map((filter) => {
    const chosen = filters[filter.name] ?? [];
    const id = `filter-${filter.name}`;
    if (filter.kind === 'given') {
      if (!chosen.length) return null;
      const kept = h('input', {type: 'hidden', name: filter.name, value: chosen[0]});
      return h('div', {class: 'filter field given'}, h('span', {class: 'label'}, filter.legend),
        h('span', {id}, filter.describe(app, chosen)), kept,
        h('button', {type: 'button', class: 'quiet', 'aria-describedby': id, onclick: () => {
          kept.value = '';
          apply(collect());
        }}, `Remove the ${filter.legend.toLowerCase()} filter`));
    }
    if (filter.kind === 'multi') {
      return h('fieldset', {class: 'filter'}, h('legend', null, filter.legend),
        filter.options(app).map((value) => h('label', {class: 'check'},
          h('input', {type: 'checkbox', name: filter.name, value,
                      checked: chosen.includes(value)}), label(value))));
    }
    if (filter.kind === 'select') {
      return h('div', {class: 'filter field'}, h('label', {for: id}, filter.legend),
        h('select', {id, name: filter.name}, filter.options(app).map(([value, text]) =>
          h('option', {value, selected: (chosen[0] ?? '') === value}, text))));
    }
    return h('div', {class: 'filter field'}, h('label', {for: id}, filter.legend),
      h('input', {id, name: filter.name, type: 'text', value: chosen.join(', '),
                  'aria-describedby': `${id}-hint`, autocomplete: 'off'}),
      h('span', {id: `${id}-hint`, class: 'hint'}, filter.hint));
  });
  const form = h('form', {class: 'filters', role: 'search', 'aria-label': 'Filter the queue'},
    controls,
    h('div', {class: 'filter-actions'},
      h('button', {type: 'submit'}, 'Apply'),
      h('button', {type: 'button', class: 'quiet', onclick: () => {
        form.reset();
        for (const input of form.querySelectorAll('input[type=checkbox]')) input.checked = false;
        for (const input of form.querySelectorAll('input[type=text]')) input.value = '';
        for (const select of form.querySelectorAll('select')) select.value = '';
        for (const input of form.querySelectorAll('input[type=hidden]')) input.value = '';
        apply(collect());
      }}, 'Clear')));
  function collect() {
    const data = new FormData(form);
    const out = {};
    for (const filter of usable(app)) {
      const values = filter.kind === 'text'
        ? String(data.get(filter.name) ?? '').split(',')
        : data.getAll(filter.name).map(String);
      const clean = values.map((v) => v.trim().toLowerCase()).filter(Boolean);
      if (clean.length) out[filter.name] = clean;
    }
    return out;
  }
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    apply(collect());
  });
  // Check boxes and menus apply at once; the tag field on Enter or Apply.
  form.addEventListener('change', (event) => {
    if (event.target.type !== 'text') apply(collect());
  });
  const wrapper = h('details', {class: 'filters-box', open: window.matchMedia('(min-width: 48em)').matches},
    h('summary', null, 'Filters'), form);
  return wrapper;
}

/** A ticket's card; ``past``: as it stood at a past moment, so its clocks are not
 * counted down from now. */
export function ticketItem(app, t, mark, selection, past = false) {
  const assignee = t.assignee ? `assigned to ${app.directory.agentName(t.assignee)}`
    : 'unassigned';
  const pick = selection ? h('input', {type: 'checkbox', class: 'pick', checked: selection.has(t.id),
    'aria-label': `Select \u201c${t.subject}\u201d`,
    onchange: (e) => selection.toggle(t.id, e.target.checked)}) : null;
  return h('li', {class: `ticket-item${mark ? ` ${mark}` : ''}${pick ? ' selectable' : ''}`,
                  dataset: {id: t.id, mark: mark ?? ''}},
    pick,
    h('article', {'aria-labelledby': `t-${t.id}`},
      h('h2', {class: 'ticket-subject'},
        h('a', {id: `t-${t.id}`, href: `#/tickets/${t.id}`}, t.subject)),
      h('p', {class: 'badges'},
        mark === 'arrived' ? h('span', {class: 'badge new'}, 'New') : null,
        mark === 'changed' ? h('span', {class: 'badge changed'}, 'Updated') : null,
        h('span', {class: `badge state-${t.state}`}, label(t.state)),
        h('span', {class: `badge priority-${t.priority}`}, label(t.priority)),
        slaSummary(t, past)),
      h('p', {class: 'meta'},
        h('span', null, t.requester.name ? `${t.requester.name} <${t.requester.email}>`
          : t.requester.email),
        h('span', null, `via ${label(t.source)}`),
        t.group_id ? h('span', {class: 'group'}, app.directory.groupName(t.group_id)) : null,
        h('span', null, assignee),
        h('span', null, 'opened ', h('time', {datetime: t.created_at, title: dateTime(t.created_at),
                                             dataset: {relative: t.created_at}},
          relative(t.created_at, now()))),
        h('span', {class: 'ticket-id', title: t.id}, `#${shortId(t.id)}`)),
      t.tags.length ? h('ul', {class: 'tags', 'aria-label': 'Tags'},
        t.tags.map((tag) => h('li', null, tag))) : null));
}

export function queueView(app, params) {
  let filters = readFilters(params);
  const moment = readMoment(params);
  // A past desk is listed newest first only (docs/as-of.md).
  let sort = !moment && SORTS[params.get('sort')] ? params.get('sort') : 'created';
  const order = () => SORTS[sort][1];
  const tickets = new Map();
  let cursor = null;
  let loading = null;
  let live = false;
  let disposed = false;
  const pending = new Map();

  const problems = h('div', {class: 'problems', hidden: true});
  const liveNote = h('div', {class: 'live-note', role: 'status'});
  const list = h('ol', {class: 'ticket-list', 'aria-label': `Tickets, ${SORTS[sort][0].toLowerCase()}`});
  const bulk = !moment && app.session.may('POST /v1/tickets/{ticket_id}/assignee')
    ? bulkBar(app, tickets, (t) => show(t, 'changed')) : null;
  const selection = bulk?.selection ?? null;
  const quick = h('nav', {class: 'quick-queues', 'aria-label': 'Queues'});
  const sortSelect = h('select', {id: 'queue-sort', name: 'sort', disabled: Boolean(moment)},
    Object.entries(SORTS).map(([value, [text]]) => h('option', {value, selected: value === sort}, text)));
  sortSelect.addEventListener('change', () => {
    sort = sortSelect.value;
    list.setAttribute('aria-label', `Tickets, ${SORTS[sort][0].toLowerCase()}`);
    remember();
    load();
  });
  const more = h('button', {type: 'button', class: 'load-more', hidden: true,
                            onclick: () => loadMore()}, 'Load more');
  const end = h('p', {class: 'list-end', hidden: true});
  const address = (chosen) => {
    const search = new URLSearchParams({...filterQuery(filters),
      ...(sort !== 'created' ? {sort} : {}), ...(chosen ?? {})}).toString();
    return `#/queue${search ? `?${search}` : ''}`;
  };
  const banner = moment ? pastBanner(moment, address(null)) : null;
  const picker = asOfPicker(moment, (chosen) => app.navigate(address(chosen)), problems);
  const element = h('section', {class: 'queue', 'aria-labelledby': 'queue-title'},
    h('div', {class: 'queue-head'},
      h('h1', {id: 'queue-title', tabindex: -1}, 'Queue'),
      !moment && app.session.may('POST /v1/tickets')
        ? h('a', {class: 'button primary', href: '#/tickets/new'}, 'New ticket') : null),
    banner?.element,
    quick,
    h('p', {class: 'help'}, moment ? 'Newest first, as they stood then. '
      : 'New and changed tickets appear here as they happen. ',
    h('label', {for: 'queue-sort'}, 'Order: '), sortSelect),
    h('details', {class: 'as-of-box', open: Boolean(moment)},
      h('summary', null, 'The desk as it stood at another moment'), picker),
    h('div', {class: 'queue-layout'},
      h('div', {class: 'queue-side'}, savedViewsNav(app), h('div', {class: 'queue-filters'})),
      h('div', {class: 'queue-list'}, problems, liveNote, bulk?.element, list, more, end)));

  /** The address keeps the filters and the order (a link, the back button), without
   * re-rendering the page: focus stays on the control just used. */
  function remember() {
    window.history.replaceState(null, '', address(moment));
    banner?.nowHref(address(null));
  }

  function renderQuick() {
    const mine = Boolean(app.directory.myId());
    fill(quick, h('ul', null, QUEUES.filter((q) => (!q.agent || mine)
      && (!q.needs || app.session.may(q.needs))).map((q) => {
      const search = new URLSearchParams({...filterQuery(q.filters), ...(moment ?? {})})
        .toString();
      return h('li', null, h('a', {href: `#/queue${search ? `?${search}` : ''}`,
        'aria-current': sameFilters(q.filters, filters) ? 'page' : null,
        onclick: (e) => {
          e.preventDefault();
          filters = {...q.filters};
          remember();
          renderFilters();
          load();
        }}, q.name));
    })));
  }

  function renderFilters() {
    fill(element.querySelector('.queue-filters'), filterForm(app, filters, (chosen) => {
      filters = chosen;
      remember();
      renderQuick();
      load();
    }));
    renderQuick();
  }

  function show(t, mark) {
    tickets.set(t.id, t);
    const item = ticketItem(app, t, mark, selection, Boolean(moment));
    const old = list.querySelector(`li[data-id="${t.id}"]`);
    if (old) {
      old.replaceWith(item);
      return item;
    }
    const after = [...list.children].find((li) => order()(t, tickets.get(li.dataset.id)) < 0);
    list.insertBefore(item, after ?? null);
    return item;
  }

  /** Names arrived (the agents, groups or organizations, after the first page was
   * drawn, or changed): every card is drawn again with them, as it was marked. */
  function redrawCards() {
    for (const li of [...list.children]) {
      const t = tickets.get(li.dataset.id);
      if (!t) continue;
      const again = ticketItem(app, t, li.dataset.mark || undefined, selection,
        Boolean(moment));
      if (li.classList.contains('stale')) again.classList.add('stale');
      li.replaceWith(again);
    }
  }

  function pageDone(page) {
    cursor = page.next_cursor;
    more.hidden = !cursor;
    end.hidden = Boolean(cursor);
    fill(end, tickets.size ? 'No more tickets.' : 'No tickets match these filters.');
  }

  async function load() {
    clearProblem(problems);
    const request = app.api.get('/v1/tickets',
      {...filterQuery(filters), sort, limit: PAGE, ...(moment ?? {})});
    loading = request;
    try {
      const page = (await request).body;
      if (loading !== request || disposed) return; // a newer load took over
      tickets.clear();
      selection?.clear();
      list.replaceChildren();
      page.data.forEach((t) => show(t));
      pageDone(page);
      banner?.named(page.as_of_seq);
    } catch (error) {
      if (loading === request) showProblem(problems, error, 'The queue could not be loaded');
    } finally {
      if (loading === request) loading = null;
    }
  }

  async function loadMore() {
    clearProblem(problems);
    more.disabled = true;
    try {
      const page = (await app.api.get('/v1/tickets',
        {...filterQuery(filters), sort, limit: PAGE, cursor, ...(moment ?? {})})).body;
      const first = page.data.find((t) => !tickets.has(t.id));
      page.data.forEach((t) => { if (!tickets.has(t.id)) show(t); });
      pageDone(page);
      // Keyboard users carry on where the new tickets begin.
      if (first) list.querySelector(`li[data-id="${first.id}"] a`)?.focus();
    } catch (error) {
      showProblem(problems, error, 'More tickets could not be loaded');
    } finally {
      more.disabled = false;
    }
  }

  /** A ticket changed (or was opened): show it as it is now, if it belongs here. */
  async function refresh(id) {
    let ticket;
    try {
      ticket = (await app.api.get(`/v1/tickets/${id}`)).body;
    } catch (error) {
      showProblem(problems, error, 'A live update could not be shown');
      return;
    }
    if (disposed) return;
    let belongs;
    try {
      belongs = await matches(app, ticket, filters);
    } catch (error) {
      showProblem(problems, error, 'A live update could not be shown');
      return;
    }
    if (disposed) return;
    if (tickets.has(id)) {
      const item = show(ticket, 'changed');
      if (!belongs) {
        item.classList.add('stale');
        item.querySelector('.badges')?.append(
          h('span', {class: 'badge'}, 'No longer matches the filters'));
      }
      return;
    }
    if (!belongs) return;
    // After the last ticket shown, while more pages follow: it comes with them.
    const shown = [...tickets.values()].sort(order());
    if (cursor && shown.length && order()(ticket, shown[shown.length - 1]) > 0) return;
    show(ticket, 'arrived');
    end.hidden = Boolean(cursor);
    announce(`New ticket: ${ticket.subject}`);
  }

  function onEvent(event) {
    // Names and choices changed: the agents, groups or field definitions.
    if (event.type === 'AgentAdded' || event.type === 'AgentUpdated'
        || /^(Group|TicketField)/.test(event.type)) {
      app.directory.load(true).then(() => { renderFilters(); redrawCards(); },
        (error) => showProblem(problems, error, 'The directory could not be loaded'));
    }
    if (event.stream_id === app.session.principal.tenant.id) return; // tenant settings
    // A contact's, an organization's, a group's or a field's stream: no ticket to show.
    if (/^(Contact|Organization|Group|TicketField)/.test(event.type)) return;
    // Several events of one command arrive together: show the ticket once.
    clearTimeout(pending.get(event.stream_id));
    pending.set(event.stream_id, setTimeout(() => {
      pending.delete(event.stream_id);
      refresh(event.stream_id);
    }, 150));
  }

  // The past does not change: a past view listens to no feed and loads at once.
  const stop = moment ? () => {} : app.feed.subscribe('tenant', {
    onLive: ({resumed}) => {
      live = true;
      if (!resumed) load();
    },
    onEvent,
    onGap: (headSeq) => {
      fill(liveNote, h('p', {class: 'notice', title: `up to event ${headSeq}`},
        'The live feed fell behind and missed some changes; the queue was reloaded to '
        + 'show the tickets as they are now.'));
      load();
    },
  });
  // Without the feed (refused, unreachable) the queue still loads, a moment later.
  const fallback = setTimeout(() => { if (!live && !loading && !tickets.size) load(); },
    moment ? 0 : LIVE_WAIT_MS);

  // The names may arrive after the first page is drawn (a cold start, a slow answer):
  // the cards are drawn again with them, not only the filters.
  app.directory.load().then(() => {
    if (disposed) return;
    renderFilters();
    redrawCards();
  }, (error) => {
    renderFilters();
    showProblem(problems, error, 'The agents could not be loaded');
  });
  renderFilters();

  /** j and k move between the cards; the order is kept for the ticket page's j and k. */
  function shortcut(key) {
    if (key !== 'j' && key !== 'k') return false;
    const links = [...list.querySelectorAll('.ticket-subject a')];
    if (!links.length) return true;
    const at = links.indexOf(document.activeElement);
    const next = key === 'j' ? Math.min(links.length - 1, at + 1) : Math.max(0, at - 1);
    links[at < 0 ? 0 : next].focus();
    return true;
  }

  return {
    element,
    title: 'Queue',
    shortcut,
    shortcuts: [['j / k', 'next / previous ticket in the queue'], ['Enter', 'open it']],
    order: () => [...list.children].map((li) => li.dataset.id),
    dispose() {
      disposed = true;
      stop();
      clearTimeout(fallback);
      for (const timer of pending.values()) clearTimeout(timer);
    },
  };
}
