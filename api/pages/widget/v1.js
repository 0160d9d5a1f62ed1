/* The helpdesk widget: paste
 *   <script src="https://<helpdesk>/widget/v1.js" data-tenant="<tenant id>" async></script>
 * into a page of a site the tenant lists in widget_origins. It draws a launcher and a
 * small form in a closed shadow root: a visitor gives an e-mail, writes, attaches a
 * file, and follows the replies (replying with a file too) while the widget session
 * lasts (docs/widget.md).
 *
 * Why a shadow root and not an iframe: the widget's routes are governed by the page's
 * origin (the browser's Origin header, checked against widget_origins, and the
 * session bound to it). A frame served by the helpdesk would call them from the
 * helpdesk's own origin, and the origin rules would no longer say which sites may
 * use the widget. The shadow root keeps the calls the page's, and keeps the site's
 * CSS out: page rules do not cross into it, and its :host rules are !important,
 * which beat the page's own !important ones on the host element.
 *
 * The token: held in this closure only, never in the DOM, an attribute, storage, a
 * cookie or a global; the shadow root is closed (the host's shadowRoot is null to the
 * page); and fetch is the one the page had when this script ran, so a script that
 * wraps window.fetch later never sees the Authorization header. (A script that ran
 * before this one could have replaced fetch first: a site that does that controls
 * its own page; the token reaches only the tickets this session opened, from it.)
 *
 * No framework, no dependency; kept under 30 KB gzipped (a test checks it). */
(() => {
  'use strict';
  const script = document.currentScript;
  if (!script) return;
  const tenant = script.dataset.tenant || '';
  const base = new URL(script.src).origin;
  const api = `${base}/v1/widget/${encodeURIComponent(tenant)}`;
  const call = window.fetch.bind(window);
  const POLL_MS = Number(script.dataset.pollMs) || 3000;

  const WORDS = {
    en: {
      help: 'Help', close: 'Close', title: 'Contact {name}', email: 'Your e-mail',
      message: 'How can we help?', file: 'Attach a file (optional)', send: 'Send',
      sending: 'Sending…', sent: 'Sent. Replies appear here while this page is open.',
      reply: 'Your reply', you: 'You', support: 'Support', off: 'Not enabled',
      offDetail: 'This help form is not enabled on this site.',
      down: 'The help desk could not be reached. Try again later.',
      ended: 'This conversation\u2019s session has ended; start a new one to write again.',
      again: 'New conversation', newReply: 'New reply from support',
      rate: 'How did we do?', good: 'Good', bad: 'Bad', comment: 'Comment (optional)',
      rateSend: 'Send my rating', rated: 'Your rating: {rating}', rateThanks: 'Thank you for your rating.',
    },
    fr: {
      help: 'Aide', close: 'Fermer', title: 'Contacter {name}', email: 'Votre adresse e-mail',
      message: 'Comment pouvons-nous vous aider ?', file: 'Joindre un fichier (facultatif)',
      send: 'Envoyer', sending: 'Envoi…',
      sent: 'Envoyé. Les réponses s’affichent ici tant que la page est ouverte.',
      reply: 'Votre réponse', you: 'Vous', support: 'Assistance', off: 'Non activé',
      offDetail: 'Ce formulaire d’aide n’est pas activé sur ce site.',
      down: 'Le service d’assistance est injoignable. Réessayez plus tard.',
      ended: 'La session de cette conversation a pris fin ; ouvrez-en une nouvelle pour écrire.',
      again: 'Nouvelle conversation', newReply: 'Nouvelle réponse de l’assistance',
      rate: 'Qu’avez-vous pensé de notre aide ?', good: 'Bien', bad: 'Pas bien',
      comment: 'Commentaire (facultatif)', rateSend: 'Envoyer ma note', rated: 'Votre note : {rating}',
      rateThanks: 'Merci pour votre note.',
    },
  };
  const lang = (navigator.languages || [navigator.language]).map((l) => String(l).toLowerCase().split('-')[0])
    .find((l) => l in WORDS) || 'en';
  const t = (key, vars) => WORDS[lang][key].replace(/\{(\w+)\}/g, (_, n) => (vars || {})[n] || '');

  const CSS = `
:host { all: initial !important; display: block !important; position: fixed !important;
  right: 1rem !important; bottom: 1rem !important; z-index: 2147483647 !important;
  visibility: visible !important; opacity: 1 !important; }
* { box-sizing: border-box; }
.w { font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif;
  color: #1b1f24; display: flex; flex-direction: column; align-items: flex-end; gap: .5rem; }
button { font: inherit; cursor: pointer; border-radius: .3rem; padding: .45rem .9rem;
  border: 1px solid var(--b); background: var(--b); color: var(--o); }
button.quiet { background: #fff; color: #1b1f24; border-color: #4b5560; }
:focus-visible { outline: 3px solid #b35c00; outline-offset: 2px; }
.launch { border-radius: 2rem; padding: .6rem 1.2rem; font-weight: 600;
  box-shadow: 0 2px 8px rgba(0,0,0,.3); }
.panel { width: min(22rem, calc(100vw - 2rem)); max-height: min(34rem, calc(100vh - 6rem));
  overflow: auto; background: #fff; border: 1px solid #c9d1da; border-radius: .5rem;
  box-shadow: 0 4px 16px rgba(0,0,0,.25); }
.panel[hidden] { display: none; }
header { display: flex; align-items: center; justify-content: space-between; gap: .5rem;
  background: var(--b); color: var(--o); padding: .5rem .75rem; }
h2 { font-size: 1rem; margin: 0; }
header button { background: transparent; color: inherit; border-color: currentColor; padding: .2rem .6rem; }
.body { padding: .75rem; }
label { display: block; font-weight: 600; margin: .5rem 0 .2rem; }
input, textarea { font: inherit; width: 100%; padding: .4rem .5rem; border: 1px solid #4b5560;
  border-radius: .25rem; background: #fff; color: #1b1f24; }
textarea { min-height: 5rem; resize: vertical; }
select { font: inherit; width: 100%; padding: .4rem .5rem; }
input[type=checkbox] { width: auto; margin-right: .4rem; }
.row { margin-top: .75rem; display: flex; gap: .5rem; flex-wrap: wrap; }
.problem { background: #fbe9ea; border: 1px solid #a4161a; border-radius: .3rem;
  padding: .4rem .6rem; margin: .6rem 0 0; }
.problem strong { color: #a4161a; }
.problem p { margin: .2rem 0 0; }
ol { list-style: none; padding: 0; margin: 0 0 .5rem; }
li { border: 1px solid #c9d1da; border-left: 4px solid #c9d1da; border-radius: .3rem;
  padding: .35rem .6rem; margin: 0 0 .4rem; white-space: pre-wrap; overflow-wrap: anywhere; }
li.theirs { border-left-color: var(--b); }
.who { font-weight: 600; font-size: .85rem; display: block; }
.file { display: block; font-size: .85rem; font-style: italic; }
.note { color: #4b5560; font-size: .9rem; margin: 0 0 .5rem; }
.values { display: grid; grid-template-columns: auto 1fr; gap: .1rem .6rem; margin: 0 0 .5rem; }
.values:empty { display: none; }
dt { font-weight: 600; } dd { margin: 0; overflow-wrap: anywhere; }
.err { color: #a4161a; font-size: .9rem; font-weight: 600; margin: .2rem 0 0; }
.err:empty { display: none; }
[aria-invalid=true] { border-color: #a4161a; outline: 1px solid #a4161a; }
fieldset { border: 1px solid #c9d1da; border-radius: .3rem; margin: .5rem 0 0; padding: .4rem .6rem; }
legend { font-weight: 600; }
fieldset label { display: inline-flex; align-items: center; margin: .2rem 1rem .2rem 0; font-weight: 400; }
input[type=radio] { width: auto; margin: 0 .35rem 0 0; }
`;

  // --- elements, from values only (nothing a visitor or an agent wrote becomes markup)
  function h(tag, attrs, ...children) {
    const el = document.createElement(tag);
    for (const [k, v] of Object.entries(attrs || {})) {
      if (v === null || v === undefined || v === false) continue;
      if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
      else el.setAttribute(k, v === true ? '' : String(v));
    }
    for (const c of children.flat()) if (c !== null && c !== undefined) el.append(c);
    return el;
  }

  const host = document.createElement('helpdesk-widget');
  const root = host.attachShadow({mode: 'closed'});
  if (root.adoptedStyleSheets !== undefined && typeof CSSStyleSheet === 'function') {
    // A constructed sheet, not a <style> element: a site whose policy forbids inline
    // styles still lets it apply.
    const sheet = new CSSStyleSheet();
    sheet.replaceSync(CSS);
    root.adoptedStyleSheets = [sheet];
  } else {
    root.append(h('style', null, CSS));
  }

  const uid = Math.random().toString(36).slice(2, 8);
  const id = (name) => `hdw-${uid}-${name}`;
  const panel = h('section', {class: 'panel', role: 'dialog', 'aria-labelledby': id('title'),
                              id: id('panel'), hidden: true, tabindex: '-1'});
  const launcher = h('button', {type: 'button', class: 'launch', 'aria-expanded': 'false',
                                'aria-controls': id('panel')}, t('help'));
  const title = h('h2', {id: id('title')}, t('help'));
  const content = h('div', {class: 'body'});
  const status = h('p', {class: 'note', role: 'status', 'aria-live': 'polite'});
  panel.append(h('header', null, title,
    h('button', {type: 'button', onclick: () => toggle(false)}, t('close'))), content);
  const wrap = h('div', {class: 'w'}, panel, launcher);
  root.append(wrap);
  wrap.style.setProperty('--b', '#1f4e79');
  wrap.style.setProperty('--o', '#ffffff');

  function toggle(open) {
    panel.hidden = !open;
    launcher.setAttribute('aria-expanded', String(open));
    if (open) drawn();
    else launcher.focus();
  }
  // The open panel's first field takes the focus, when it opens and when a view is
  // drawn into it (the form once the brand arrives), unless the visitor is in it.
  function drawn() {
    const at = root.activeElement;
    if (panel.hidden || (at && at !== panel && panel.contains(at))) return;
    (content.querySelector('input, textarea, button') || panel).focus();
  }
  // A button disabled while its request runs loses the focus; when it is enabled
  // again, a keyboard user who was on it gets it back (unless they went elsewhere).
  function enable(button) {
    button.disabled = false;
    if (!panel.hidden && button.isConnected && !root.activeElement) button.focus();
  }
  launcher.addEventListener('click', () => toggle(panel.hidden));
  panel.addEventListener('keydown', (e) => { if (e.key === 'Escape') toggle(false); });

  function problemOf(error) {
    const p = error.problem || {title: t('down'), detail: String(error.message || error)};
    return h('div', {class: 'problem', role: 'alert'}, h('strong', null, p.title || 'Error'),
      p.detail ? h('p', null, p.detail) : null,
      error.status ? h('p', null, `${error.status}${p.code ? ` ${p.code}` : ''}`) : null);
  }

  // --- the API, from the page's origin ------------------------------------------------
  let session = null; // {token, expiresAt}: in this closure only

  function key() {
    return `widget-${[...crypto.getRandomValues(new Uint8Array(16))]
      .map((b) => b.toString(16).padStart(2, '0')).join('')}`;
  }

  async function request(method, path, {json, body, headers, idem} = {}) {
    const hs = {Accept: 'application/json', ...headers};
    if (session) hs.Authorization = `Bearer ${session.token}`;
    if (json !== undefined) hs['Content-Type'] = 'application/json';
    if (idem) hs['Idempotency-Key'] = idem;
    let response;
    try {
      response = await call(api + path, {method, headers: hs, credentials: 'omit',
        cache: 'no-store', body: json !== undefined ? JSON.stringify(json) : body});
    } catch (error) {
      throw Object.assign(new Error(error.message), {network: true});
    }
    const text = await response.text();
    let answer = null;
    try { answer = text ? JSON.parse(text) : null; } catch { answer = null; }
    if (!response.ok) {
      throw Object.assign(new Error(answer && answer.title), {status: response.status,
        problem: answer && answer.title ? answer : {title: `HTTP ${response.status}`, detail: text.slice(0, 300)}});
    }
    return answer;
  }

  function readableOn(hex) {
    const [r, g, b] = [1, 3, 5].map((i) => parseInt(hex.slice(i, i + 2), 16) / 255)
      .map((c) => (c <= 0.03928 ? c / 12.92 : ((c + 0.055) / 1.055) ** 2.4));
    return 0.2126 * r + 0.7152 * g + 0.0722 * b > 0.179 ? '#000000' : '#ffffff';
  }

  // --- views ------------------------------------------------------------------------
  function notEnabled(reachable) {
    content.replaceChildren(h('div', {class: 'problem', role: 'alert'},
      h('strong', null, reachable ? t('off') : t('down')),
      reachable ? h('p', null, t('offDetail')) : null));
    drawn();
  }

  // The file chosen in ``input``, uploaded once (``idem``): its id in a list, or none.
  async function upload(input, idem) {
    const chosen = input.files[0];
    if (!chosen) return [];
    const up = await request('POST', `/uploads?name=${encodeURIComponent(chosen.name)}`, {
      body: chosen, idem, headers: {'Content-Type': chosen.type || 'application/octet-stream'}});
    return [up.id];
  }

  // A control's own error line, right after it and named by its aria-describedby:
  // the browser's check of a required or malformed value, or the API's refusal naming
  // the control's field (a 422 whose errors[].loc is body.<name>).
  function errorLine(control) {
    const line = h('p', {class: 'err', id: `${control.id}-error`, 'aria-live': 'polite'});
    control.setAttribute('aria-describedby', line.id);
    const set = (text) => {
      line.textContent = text || '';
      if (text) control.setAttribute('aria-invalid', 'true');
      else control.removeAttribute('aria-invalid');
    };
    return {line, set, check: () => { set(control.checkValidity() ? '' : control.validationMessage);
      return control.checkValidity(); }};
  }

  // The errors of a 422 by where they point (``email``, ``fields.<key>``), joined.
  function errorsAt(error) {
    const at = new Map();
    for (const e of (error.problem && error.problem.errors) || []) {
      if (!Array.isArray(e.loc) || e.loc[0] !== 'body') continue;
      const where = e.loc.slice(1).join('.');
      at.set(where, [at.get(where), e.msg].filter(Boolean).join('; '));
    }
    return at;
  }

  // The tenant's ticket fields open to customers, drawn as the portal draws them: a
  // field required on open is required here too. Each is [label and control, value(),
  // its error line]; a field shown read-only (set by agents) is not asked for, only
  // shown with the ticket's other values on the thread.
  let fields = [];
  function fieldControl(f) {
    const fid = id(`field-${f.key}`);
    if (f.type === 'checkbox') {
      const box = h('input', {id: fid, type: 'checkbox'});
      const err = errorLine(box);
      return [[h('label', {for: fid}, box, f.title), err.line], () => box.checked, err];
    }
    const attrs = {id: fid, required: f.required};
    const control = f.type === 'dropdown'
      ? h('select', attrs, h('option', {value: ''}, '—'),
        f.options.map((o) => h('option', {value: o.value}, o.title)))
      : h('input', {...attrs, type: f.type === 'number' ? 'number' : f.type === 'date' ? 'date' : 'text',
        step: f.type === 'number' ? 'any' : null});
    const value = () => (control.value === '' ? null
      : f.type === 'number' ? Number(control.value) : control.value);
    const err = errorLine(control);
    return [[h('label', {for: fid}, f.title), control, err.line], value, err];
  }

  function form(name) {
    const slot = h('div');
    const drawnFields = fields.filter((f) => !f.read_only).map((f) => [f.key, ...fieldControl(f)]);
    const email = h('input', {id: id('email'), type: 'email', autocomplete: 'email', required: true});
    const message = h('textarea', {id: id('message'), required: true});
    const file = h('input', {id: id('file'), type: 'file'});
    const send = h('button', {type: 'submit'}, t('send'));
    const emailError = errorLine(email);
    const messageError = errorLine(message);
    // Where each error is shown: the control of the field it names.
    const lines = new Map([['email', emailError], ['body', messageError], ['subject', messageError],
      ...drawnFields.map(([k, , , err]) => [`fields.${k}`, err])]);
    // novalidate: the browser's checks run on submit all the same, and their messages
    // are shown next to each control rather than in a bubble that vanishes.
    const f = h('form', {'aria-label': t('title', {name}), novalidate: true},
      h('label', {for: id('email')}, t('email')), email, emailError.line,
      h('label', {for: id('message')}, t('message')), message, messageError.line,
      drawnFields.flatMap(([, control]) => control),
      h('label', {for: id('file')}, t('file')), file,
      h('div', {class: 'row'}, send), slot);
    const ticketKey = key();
    const uploadKey = key();
    f.addEventListener('submit', async (e) => {
      e.preventDefault();
      slot.replaceChildren();
      const bad = [...new Set(lines.values())].filter((err) => !err.check());
      if (bad.length) {
        root.getElementById(bad[0].line.id.replace(/-error$/, '')).focus();
        return;
      }
      send.disabled = true;
      send.textContent = t('sending');
      try {
        if (!session || session.email !== email.value) {
          const opened = await request('POST', '/sessions', {json: {email: email.value}});
          session = {token: opened.access_token, expiresAt: Date.parse(opened.expires_at),
                     email: email.value};
        }
        const attachments = await upload(file, uploadKey);
        const values = {};
        for (const [k, , value] of drawnFields) if (value() !== null) values[k] = value();
        const text = message.value.trim();
        const subject = (text.split('\n')[0] || text).slice(0, 120);
        const ticket = await request('POST', '/tickets',
          {json: {subject, body: message.value, attachments, fields: values}, idem: ticketKey});
        thread(ticket.id);
      } catch (error) {
        slot.replaceChildren(problemOf(error));
        const at = errorsAt(error);
        const first = [...at.keys()].find((where) => lines.has(where));
        for (const [where, text] of at) if (lines.has(where)) lines.get(where).set(text);
        if (first) root.getElementById(lines.get(first).line.id.replace(/-error$/, '')).focus();
      } finally {
        enable(send);
        send.textContent = t('send');
      }
    });
    content.replaceChildren(f);
    drawn();
  }

  let poller = null;

  // A ticket's values of the fields open to customers, titled as the form titles them.
  function showValues(dl, given) {
    const shown = (f, v) => (typeof v === 'boolean' ? (v ? '✓' : '✗')
      : [].concat(v).map((x) => ((f && f.options.find((o) => o.value === x)) || {title: x}).title).join(', '));
    dl.replaceChildren(...Object.keys(given).sort().flatMap((k) => {
      const f = fields.find((d) => d.key === k);
      return [h('dt', null, f ? f.title : k), h('dd', {'data-key': k}, shown(f, given[k]))];
    }));
  }

  // "How did we do?" on a solved ticket: good or bad and an optional comment, sent to
  // the rating route; the current rating is shown while there is one (a later rating
  // replaces it until the ticket closes). Drawn once per state, so a poll does not
  // wipe what the visitor is typing; ``update(ticket)`` follows the ticket.
  function rating(ticketId) {
    const box = h('div', {class: 'rating'});
    const current = h('p', {class: 'note', role: 'status'});
    let drawnFor = null;
    function show(ticket) {
      const s = ticket.satisfaction;
      current.textContent = s ? `${t('rated', {rating: t(s.rating)})}${s.comment ? ` · ${s.comment}` : ''}` : '';
    }
    function draw(ticket) {
      if (ticket.state !== 'solved') {
        box.replaceChildren(current);
        return;
      }
      const slot = h('div');
      const choices = ['good', 'bad'].map((r) => h('input', {type: 'radio', name: id('rating'),
        id: id(`rating-${r}`), value: r, required: true}));
      const comment = h('textarea', {id: id('rating-comment')});
      const send = h('button', {type: 'submit'}, t('rateSend'));
      const legend = h('legend', {id: id('rate')}, t('rate'));
      const group = h('fieldset', {'aria-describedby': id('rating-err')}, legend,
        choices.map((c) => h('label', {for: c.id}, c, t(c.value))));
      const err = h('p', {class: 'err', id: id('rating-err'), 'aria-live': 'polite'});
      const commentErr = errorLine(comment);
      const f = h('form', {'aria-labelledby': id('rate'), novalidate: true}, group, err,
        h('label', {for: comment.id}, t('comment')), comment, commentErr.line,
        h('div', {class: 'row'}, send), slot);
      f.addEventListener('submit', async (e) => {
        e.preventDefault();
        slot.replaceChildren();
        const chosen = choices.find((c) => c.checked);
        err.textContent = chosen ? '' : choices[0].validationMessage;
        if (!chosen) { choices[0].focus(); return; }
        send.disabled = true;
        try {
          const rated = await request('POST', `/tickets/${ticketId}/rating`, {idem: key(),
            json: {rating: chosen.value, comment: comment.value.trim() || null}});
          show(rated);
          slot.replaceChildren(h('p', {class: 'note'}, t('rateThanks')));
        } catch (error) {
          slot.replaceChildren(problemOf(error));
          const at = errorsAt(error);
          err.textContent = at.get('rating') || '';
          commentErr.set(at.get('comment'));
          if (at.has('comment')) comment.focus();
        } finally {
          enable(send);
        }
      });
      box.replaceChildren(current, f);
    }
    return {element: box, update(ticket) {
      show(ticket);
      if (drawnFor !== ticket.state) {
        drawnFor = ticket.state;
        draw(ticket);
      }
    }};
  }

  function thread(ticketId) {
    const list = h('ol', {'aria-label': t('help')});
    const slot = h('div');
    const reply = h('textarea', {id: id('reply'), required: true});
    const file = h('input', {id: id('reply-file'), type: 'file'});
    const send = h('button', {type: 'submit'}, t('send'));
    const f = h('form', {'aria-label': t('reply')}, h('label', {for: id('reply')}, t('reply')),
      reply, h('label', {for: id('reply-file')}, t('file')), file,
      h('div', {class: 'row'}, send), slot);
    const rated = rating(ticketId);
    const values = h('dl', {class: 'values'});
    let seen = 0;
    let replyKey = key();
    let uploadKey = key();
    async function load() {
      if (!session || Date.now() >= session.expiresAt) {
        clearInterval(poller);
        session = null;
        content.replaceChildren(h('p', {class: 'note'}, t('ended')),
          h('button', {type: 'button', onclick: () => form(title.dataset.name || '')}, t('again')));
        return;
      }
      try {
        const [page, ticket] = await Promise.all([
          request('GET', `/tickets/${ticketId}/messages?limit=100`),
          request('GET', `/tickets/${ticketId}`)]);
        rated.update(ticket);
        showValues(values, ticket.fields || {});
        list.replaceChildren(...page.data.map((m) => h('li', {class: m.author_kind === 'customer' ? 'mine' : 'theirs'},
          h('span', {class: 'who'}, m.author_kind === 'customer' ? t('you') : t('support')), m.body,
          (m.attachments || []).map((a) => h('span', {class: 'file'}, a.name)))));
        const theirs = page.data.filter((m) => m.author_kind !== 'customer').length;
        if (theirs > seen && seen >= 0) status.textContent = t('newReply');
        seen = theirs;
        slot.replaceChildren();
      } catch (error) {
        slot.replaceChildren(problemOf(error));
      }
    }
    f.addEventListener('submit', async (e) => {
      e.preventDefault();
      send.disabled = true;
      try {
        const attachments = await upload(file, uploadKey);
        await request('POST', `/tickets/${ticketId}/messages`,
          {json: {body: reply.value, attachments}, idem: replyKey});
        reply.value = '';
        file.value = '';
        replyKey = key();
        uploadKey = key();
        await load();
      } catch (error) {
        slot.replaceChildren(problemOf(error));
      } finally {
        enable(send);
      }
    });
    status.textContent = t('sent');
    content.replaceChildren(status, values, list, rated.element, f);
    drawn();  // the sent form is gone: the focus goes on to the reply box, not the page
    clearInterval(poller);
    poller = setInterval(load, POLL_MS);
    load();
  }

  async function start() {
    try {
      const [brand, listed] = await Promise.all([request('GET', '/brand'),
                                                 request('GET', '/ticket-fields')]);
      fields = listed.data;
      // The name and the form together: the title says the form is there.
      title.textContent = t('title', {name: brand.name});
      title.dataset.name = brand.name;
      if (brand.colour) {
        wrap.style.setProperty('--b', brand.colour);
        wrap.style.setProperty('--o', readableOn(brand.colour));
      }
      form(brand.name);
    } catch (error) {
      if (!error.network) return notEnabled(true);
      // A refused origin's answer carries no CORS header, so the page cannot read it:
      // ask whether the helpdesk answers at all (an opaque answer says it does).
      try {
        await call(`${base}/health/live`, {mode: 'no-cors', credentials: 'omit'});
        notEnabled(true);
      } catch {
        notEnabled(false);
      }
    }
    return undefined;
  }

  function attach() {
    // A stylesheet that hides every element hides the root element too, and nothing
    // in a hidden root is drawn: the widget restores the root's default display, and
    // touches nothing else of the page.
    const rootElement = document.documentElement;
    rootElement.append(host);
    if (getComputedStyle(rootElement).display === 'none') {
      rootElement.style.setProperty('display', 'block', 'important');
    }
    start();
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', attach);
  else attach();
})();
