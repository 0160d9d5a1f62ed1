// The help portal: a contact sets a password from the link the support team sent,
// signs in, lists their tickets, opens one with files and the tenant's ticket fields
// open to customers, reads its public thread and
// replies, with live updates. The tenant is the first segment of the address
// (/portal/<tenant>/); pages are hash routes: #/password/<token>, #/sign-in,
// #/tickets, #/new, #/tickets/<id>.
//
// The element builder and the API client are the console's (one copy of each): every
// element is built from values, never from HTML strings, and every failed call is an
// ApiError whose problem (title, detail, status, code) is shown where it happened.

import {Api, ApiError, newIdempotencyKey} from '/console/js/api.js';
import {announce, busy, clearProblem, fill, h, onSubmit, problemView, showProblem} from '/console/js/dom.js';
import {PortalFeed} from './feed.js';
import {fieldControls, fieldValues} from './fields.js';
import {lang, t, when} from './i18n.js';
import {PortalSession} from './session.js';

const TENANT = decodeURIComponent(location.pathname.split('/')[2] ?? '');
const main = document.getElementById('main');
const nav = document.getElementById('nav');
const liveBadge = document.getElementById('live');
const signOutButton = document.getElementById('sign-out');
const INLINE = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

const session = new PortalSession(TENANT, (error) => {
  feed.stop();
  drawSignIn(error);
});
const api = new Api(session);
let current = {ticketId: null, reload: null};
const feed = new PortalFeed(session, {
  onEvent(event) {
    if (current.ticketId === event.stream_id && event.type === 'MessageAdded') {
      announce(t('newReply'));
    }
    current.reload?.(event.stream_id);
  },
  onGap() { current.reload?.(null); },
  onStatus(live) {
    liveBadge.hidden = false;
    liveBadge.textContent = live ? t('live') : t('offline');
    liveBadge.classList.toggle('offline', !live);
  },
});

// --- brand and words -----------------------------------------------------------------

function readableOn(hex) {
  const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255)
    .map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
  return 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.179 ? '#000000' : '#ffffff';
}

async function drawBrand() {
  document.documentElement.lang = lang();
  document.getElementById('skip-link').textContent = t('skip');
  signOutButton.textContent = t('signOut');
  const {body} = await api.get(`/v1/portal/brand/${encodeURIComponent(TENANT)}`, null,
                               {credential: 'none'});
  document.getElementById('brand').textContent = body.name;
  document.title = `${body.name} · ${t('portal')}`;
  if (body.colour) {
    // CSSOM, not a style attribute: the policy forbids inline styles, not this.
    document.documentElement.style.setProperty('--brand', body.colour);
    document.documentElement.style.setProperty('--on-brand', readableOn(body.colour));
  }
  return body;
}

// --- pages --------------------------------------------------------------------------

function page(titleText, ...children) {
  const title = h('h1', {id: 'page-title', tabindex: -1}, titleText);
  fill(main, h('section', {'aria-labelledby': 'page-title'}, title, children));
  title.focus();
  return title;
}

function field(id, label, control) {
  control.id = id;
  return h('p', {class: 'field'}, h('label', {for: id}, label), control);
}

function signedInChrome(on) {
  signOutButton.hidden = !on;
  liveBadge.hidden = !on;
  fill(nav, on ? [h('a', {href: '#/tickets'}, t('myTickets')),
    h('a', {href: '#/new'}, t('newTicket'))] : []);
}

function drawSignIn(error, notice) {
  signedInChrome(false);
  const problem = h('div', {class: 'problem-slot', hidden: true});
  const email = h('input', {type: 'email', name: 'email', autocomplete: 'username', required: true});
  const password = h('input', {type: 'password', name: 'password',
                               autocomplete: 'current-password', required: true});
  const form = h('form', {'aria-label': t('signIn'), class: 'card'},
    field('sign-in-email', t('email'), email),
    field('sign-in-password', t('password'), password),
    h('p', null, h('button', {type: 'submit', class: 'primary'}, t('signIn'))), problem);
  onSubmit(form, async () => {
    const {body} = await api.post('/v1/portal/auth/sign-in',
      {tenant: TENANT, email: email.value, password: password.value}, {credential: 'none'});
    session.keep(body);
    feed.start();
    location.hash = '#/tickets';
    route();
  }, (err) => showProblem(problem, err, t('signIn')));
  page(t('signInTitle'), notice ? h('p', {class: 'notice', role: 'status'}, notice) : null,
    form);
  if (error) showProblem(problem, error);
}

function drawPassword(token) {
  signedInChrome(false);
  const problem = h('div', {class: 'problem-slot', hidden: true});
  const password = h('input', {type: 'password', name: 'new-password', minlength: 10,
                               autocomplete: 'new-password', required: true});
  const form = h('form', {'aria-label': t('setPassword'), class: 'card'},
    h('p', null, t('setPasswordIntro')),
    field('new-password', t('newPassword'), password),
    h('p', null, h('button', {type: 'submit', class: 'primary'}, t('setPassword'))), problem);
  onSubmit(form, async () => {
    await api.post('/v1/portal/auth/password', {token, password: password.value},
                   {credential: 'none'});
    history.replaceState(null, '', '#/sign-in');
    drawSignIn(null, t('passwordSet'));
  }, (err) => {
    const view = problemView(err, t('setPassword'));
    fill(problem, view);
    // A spent link says so, and how to get another (the problem is shown too).
    if (err instanceof ApiError && (err.status === 410 || err.status === 404)) {
      view.append(h('p', {class: 'link-help'},
        h('strong', null, err.status === 410 ? t('linkGone') : t('linkUnknown')), ' ',
        err.status === 410 ? t('linkHelp') : ''));
    }
    problem.hidden = false;
  });
  page(t('setPasswordTitle'), form);
}

function stateBadge(state) {
  return h('span', {class: `badge state-${state}`}, `${t('state')}: ${t(`state_${state}`)}`);
}

function drawTickets() {
  const list = h('ul', {class: 'tickets', 'aria-label': t('myTickets')});
  const problem = h('div', {class: 'problem-slot', hidden: true});
  const more = h('button', {type: 'button', hidden: true}, t('loadMore'));
  let cursor = null;

  function card(ticket) {
    return h('li', {class: 'ticket-card', dataset: {id: ticket.id}},
      h('a', {href: `#/tickets/${ticket.id}`}, ticket.subject), ' ', stateBadge(ticket.state),
      h('p', {class: 'meta'}, t('updated', {when: when(ticket.updated_at)})));
  }

  async function load(reset) {
    try {
      const {body} = await api.get('/v1/portal/tickets', {limit: 10, cursor: reset ? null : cursor});
      if (reset) list.replaceChildren();
      list.append(...body.data.map(card));
      if (!list.children.length) list.append(h('li', {class: 'empty'}, t('noTickets')));
      cursor = body.next_cursor;
      more.hidden = !cursor;
      clearProblem(problem);
    } catch (err) {
      showProblem(problem, err, t('myTickets'));
    }
  }

  more.addEventListener('click', () => busy(more.parentElement, () => load(false)));
  page(t('myTickets'), h('p', null, h('a', {href: '#/new', class: 'button primary'}, t('newTicket'))),
    problem, list, h('p', null, more));
  current = {ticketId: null, reload: () => load(true)};
  return load(true);
}

/** The file picker of a form: uploads the chosen files when the form is sent, each
 * once (its Idempotency-Key kept until the message went), and answers their ids. */
function filePicker(id) {
  const input = h('input', {type: 'file', multiple: true});
  const chosen = h('ul', {class: 'chosen-files', 'aria-label': t('filesToAttach')});
  let files = [];
  const draw = () => chosen.replaceChildren(...files.map((f, i) => h('li', null, f.file.name, ' ',
    h('button', {type: 'button', class: 'link', onclick: () => { files.splice(i, 1); draw(); }},
      t('remove', {name: f.file.name})))));
  input.addEventListener('change', () => {
    for (const file of input.files) files.push({file, key: newIdempotencyKey(), id: null});
    input.value = '';
    draw();
  });
  return {
    element: h('div', {class: 'file-picker'}, field(id, t('attach'), input), chosen),
    async upload() {
      for (const f of files) {
        if (f.id) continue;
        const answer = await fileCall('POST', `/v1/portal/uploads?name=${encodeURIComponent(f.file.name)}`,
          {body: f.file, headers: {'Content-Type': f.file.type || 'application/octet-stream',
                                   'Idempotency-Key': f.key}});
        f.id = (await answer.json()).id;
      }
      return files.map((f) => f.id);
    },
    clear() { files = []; draw(); },
  };
}

/** A call whose body or answer is a file (not JSON): the portal token, one refresh on
 * a 401, and the problem of a refusal as an ApiError. */
async function fileCall(method, path, {body, headers} = {}) {
  for (let attempt = 0; ; attempt += 1) {
    const response = await fetch(path, {method, body, cache: 'no-store',
      headers: {...headers, Authorization: session.authorization()}});
    if (response.ok) return response;
    if (response.status === 401 && attempt === 0 && await session.refresh()) continue;
    let problem;
    try {
      problem = await response.json();
    } catch {
      problem = {title: response.statusText || `HTTP ${response.status}`};
    }
    throw new ApiError(response.status, problem, response.headers);
  }
}

function attachments(list) {
  if (!list?.length) return null;
  return h('ul', {class: 'attachments', 'aria-label': t('files')}, list.map((a) => {
    const download = h('button', {type: 'button', class: 'link'}, t('download', {name: a.name}));
    const item = h('li', {class: 'attachment'}, download, ` (${Math.ceil(a.size / 1024)} KB)`);
    download.addEventListener('click', async () => {
      try {
        const url = URL.createObjectURL(await (await fileCall('GET', `/v1/portal/attachments/${a.id}`)).blob());
        h('a', {href: url, download: a.name || 'file'}).click();
        setTimeout(() => URL.revokeObjectURL(url), 60_000);
      } catch (err) {
        item.append(problemView(err, t('download', {name: a.name})));
      }
    });
    if (INLINE.has(a.type)) {
      const img = h('img', {class: 'thumbnail', alt: t('preview', {name: a.name}), width: 96});
      fileCall('GET', `/v1/portal/attachments/${a.id}?disposition=inline`)
        .then(async (r) => { img.src = URL.createObjectURL(await r.blob()); })
        .catch(() => img.remove());
      item.prepend(img);
    }
    return item;
  }));
}

/** The ticket fields a customer fills in (key order). */
async function customerFields() {
  return (await api.get('/v1/portal/ticket-fields')).body.data;
}

async function drawNewTicket() {
  const problem = h('div', {class: 'problem-slot', hidden: true});
  const subject = h('input', {type: 'text', maxlength: 200, required: true});
  const body = h('textarea', {rows: 6, required: true});
  const files = filePicker('new-files');
  // A field shown read-only is the agents' to set: on the ticket, never in this form.
  const fields = fieldControls((await customerFields()).filter((d) => !d.read_only));
  const key = newIdempotencyKey();
  const form = h('form', {'aria-label': t('newTicketTitle'), class: 'card'},
    field('new-subject', t('subject'), subject), field('new-body', t('message'), body),
    fields.element, files.element, h('p', null, h('button', {type: 'submit', class: 'primary'}, t('send'))),
    problem);
  onSubmit(form, async () => {
    const ids = await files.upload();
    const {body: ticket} = await api.post('/v1/portal/tickets',
      {subject: subject.value, body: body.value, attachments: ids, fields: fields.values()},
      {idempotencyKey: key});
    files.clear();
    announce(t('sent'));
    location.hash = `#/tickets/${ticket.id}`;
  }, (err) => showProblem(problem, err, t('newTicketTitle')));
  current = {ticketId: null, reload: null};
  page(t('newTicketTitle'), form);
}

/** A ticket's satisfaction: its current rating when there is one, and on a solved
 * ticket "How did we do?" (good or bad, an optional comment), sent to the rating route;
 * a later rating replaces the earlier until the ticket closes. The form is drawn again
 * only when the state changes, so a live update does not wipe what is being typed. */
function ratingBox(id) {
  const element = h('div', {class: 'rating'});
  const current = h('p', {class: 'current-rating', role: 'status'});
  let drawnFor = null;
  function show(ticket) {
    const s = ticket.satisfaction;
    current.textContent = s
      ? `${t('rated', {rating: t(s.rating)})}${s.comment ? ` · ${s.comment}` : ''}` : '';
    current.hidden = !s;
  }
  function draw(ticket) {
    // Only the requester rates: one copied on the ticket sees the rating, no form.
    if (ticket.state !== 'solved' || ticket.copied) {
      element.replaceChildren(current);
      return;
    }
    const problem = h('div', {class: 'problem-slot', hidden: true});
    const choices = ['good', 'bad'].map((r) => h('input', {type: 'radio', name: 'rating',
      id: `rating-${r}`, value: r}));
    const choiceError = h('p', {class: 'field-error', id: 'rating-error', 'aria-live': 'polite'});
    const commentError = h('p', {class: 'field-error', id: 'rating-comment-error',
                                 'aria-live': 'polite'});
    const comment = h('textarea', {rows: 3, 'aria-describedby': commentError.id});
    const group = h('fieldset', {class: 'field rating-choices', 'aria-describedby': choiceError.id},
      h('legend', null, t('rate')),
      choices.map((c) => h('label', {for: c.id, class: 'check'}, c, ' ', t(c.value))));
    const form = h('form', {'aria-label': t('rate'), class: 'card', novalidate: true},
      group, choiceError, field('rating-comment', t('ratingComment'), comment), commentError,
      h('p', null, h('button', {type: 'submit', class: 'primary'}, t('rateSend'))), problem);
    form.addEventListener('submit', (e) => {
      e.preventDefault();
      const chosen = choices.find((c) => c.checked);
      choiceError.textContent = chosen ? '' : t('rateChoose');
      if (!chosen) {
        choices[0].focus();
        return;
      }
      busy(form, async () => {
        try {
          const {body} = await api.post(`/v1/portal/tickets/${id}/rating`,
            {rating: chosen.value, comment: comment.value.trim() || null},
            {idempotencyKey: newIdempotencyKey()});
          show(body);
          clearProblem(problem);
          commentError.textContent = '';
          comment.removeAttribute('aria-invalid');
          announce(t('rateThanks'));
        } catch (err) {
          showProblem(problem, err, t('rate'));
          const said = (err.problem?.errors ?? []).filter((f) => f.loc?.[1] === 'comment');
          commentError.textContent = said.map((f) => f.msg).join('; ');
          if (said.length) {
            comment.setAttribute('aria-invalid', 'true');
            comment.focus();
          } else {
            comment.removeAttribute('aria-invalid');
          }
        }
      });
    });
    element.replaceChildren(current, form);
  }
  return {element, update(ticket) {
    show(ticket);
    if (drawnFor !== ticket.state) {
      drawnFor = ticket.state;
      draw(ticket);
    }
  }};
}

async function drawTicket(id) {
  const problem = h('div', {class: 'problem-slot', hidden: true});
  const thread = h('ol', {class: 'thread', 'aria-label': t('message')});
  const heading = h('p', {class: 'meta'});
  const values = h('div', {class: 'ticket-fields'});
  const rating = ratingBox(id);
  let ticket;
  let defs;
  try {
    [ticket, defs] = await Promise.all([
      api.get(`/v1/portal/tickets/${encodeURIComponent(id)}`).then((r) => r.body),
      customerFields()]);
  } catch (err) {
    if (err instanceof ApiError && (err.status === 404 || err.status === 422)) {
      page(t('notFound'), h('p', null, t('notFoundDetail')), problemView(err),
        h('p', null, h('a', {href: '#/tickets'}, t('back'))));
      return;
    }
    throw err;
  }

  function message(m) {
    const mine = m.author_kind === 'customer';
    return h('li', {class: `message ${mine ? 'mine' : 'theirs'}`, dataset: {id: m.id}},
      h('p', {class: 'author'}, mine ? t('you') : t('support'), ' · ', when(m.created_at)),
      h('p', {class: 'body'}, m.body), attachments(m.attachments));
  }

  async function loadThread() {
    try {
      const all = [];
      let cursor = null;
      do {
        const {body} = await api.get(`/v1/portal/tickets/${id}/messages`, {limit: 100, cursor});
        all.push(...body.data);
        cursor = body.next_cursor;
      } while (cursor);
      thread.replaceChildren(...all.map(message));
      ticket = (await api.get(`/v1/portal/tickets/${id}`)).body;
      fill(heading, stateBadge(ticket.state), ' ', t('opened', {when: when(ticket.created_at)}));
      fill(values, fieldValues(defs, ticket.fields));
      rating.update(ticket);
      clearProblem(problem);
    } catch (err) {
      showProblem(problem, err);
    }
  }

  const replyProblem = h('div', {class: 'problem-slot', hidden: true});
  const replyBody = h('textarea', {rows: 4, required: true});
  const files = filePicker('reply-files');
  let key = newIdempotencyKey();
  const form = h('form', {'aria-label': t('reply'), class: 'card'},
    field('reply-body', t('yourReply'), replyBody), files.element,
    h('p', null, h('button', {type: 'submit', class: 'primary'}, t('send'))), replyProblem);
  onSubmit(form, async () => {
    const ids = await files.upload();
    const {body} = await api.post(`/v1/portal/tickets/${id}/messages`,
      {body: replyBody.value, attachments: ids}, {idempotencyKey: key});
    replyBody.value = '';
    files.clear();
    key = newIdempotencyKey();
    if (body.ticket.id !== id) {
      announce(t('followUp'));
      location.hash = `#/tickets/${body.ticket.id}`;
      return;
    }
    announce(t('sent'));
    await loadThread();
  }, (err) => showProblem(replyProblem, err, t('reply')));
  // One copied on the ticket reads it; only the requester replies (403 copied_only),
  // so the page says so in place of a form that would be refused.
  const answer = ticket.copied ? h('p', {class: 'card copied-note'}, t('copiedOnly')) : form;
  page(ticket.subject, heading, values, problem, thread, rating.element, answer,
    h('p', null, h('a', {href: '#/tickets'}, t('back'))));
  current = {ticketId: id, reload: (changed) => (changed === null || changed === id) && loadThread()};
  await loadThread();
}

// --- routing ------------------------------------------------------------------------

async function route() {
  const path = location.hash.replace(/^#/, '') || '/tickets';
  const [, section, arg] = path.split('/');
  try {
    if (section === 'password' && arg) return drawPassword(decodeURIComponent(arg));
    if (!session.signedIn) return drawSignIn();
    signedInChrome(true);
    if (section === 'new') return await drawNewTicket();
    if (section === 'tickets' && arg) return await drawTicket(arg);
    return await drawTickets();
  } catch (err) {
    page(t('unreachable'), problemView(err));
  }
  return undefined;
}

signOutButton.addEventListener('click', async () => {
  feed.stop();
  await session.signOut();
  history.replaceState(null, '', '#/sign-in');  // no hashchange: this page says why
  drawSignIn(null, t('signedOut'));
});

window.addEventListener('hashchange', route);
// The skip link moves the focus to the content without following its href: the pages
// are hash routes, and "#main" would leave the page for "My tickets".
document.getElementById('skip-link').addEventListener('click', (e) => {
  e.preventDefault();
  main.focus();
});

(async () => {
  try {
    await drawBrand();
  } catch (err) {
    page(err instanceof ApiError && err.status === 404 ? t('noTenant') : t('unreachable'),
      problemView(err));
    return;
  }
  if (session.signedIn) feed.start();
  await route();
})();
