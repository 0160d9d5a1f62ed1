// What the desk's automation brings to the pages: macros applied from the ticket page
// (a preview first, then one command with If-Match and an Idempotency-Key), canned
// replies (macros with text only) offered by name in the reply box, and the saved
// views in the queue's sidebar. Each part is drawn only when the role may use it.

import {newIdempotencyKey} from '../api.js';
import {announce, busy, clearProblem, fill, h, showProblem} from '../dom.js';

/** The macros the caller sees (shared and their own), read once per page. */
async function macros(app) {
  const out = [];
  let cursor = null;
  do {
    const page = (await app.api.get('/v1/macros', {limit: 100, cursor})).body;
    out.push(...page.data);
    cursor = page.next_cursor;
  } while (cursor);
  return out;
}

/** The ticket page's macro panel: pick a macro, see what it would do, apply it.
 * ``current()`` is the ticket as the page shows it; ``applied(ticket)`` redraws it. */
export function macroPanel(app, ticketId, current, applied) {
  if (!app.session.may('POST /v1/tickets/{ticket_id}/macros/{macro_id}')) return null;
  const select = h('select', {id: 'macro-choice', name: 'macro'});
  const preview = h('div', {class: 'macro-preview', role: 'status'});
  const problems = h('div', {class: 'problems', hidden: true});
  const previewButton = h('button', {type: 'button'}, 'Preview');
  const applyButton = h('button', {type: 'submit', class: 'primary'}, 'Apply macro');
  const form = h('form', {class: 'property-form macro-form', 'aria-label': 'Apply a macro'},
    h('label', {for: 'macro-choice'}, 'Macro'), select, previewButton, applyButton,
    problems, preview);
  const element = h('section', {'aria-labelledby': 'macros-title', hidden: true},
    h('h2', {id: 'macros-title'}, 'Macros'), form);

  macros(app).then((all) => {
    const usable = all.filter((m) => !m.canned);
    if (!usable.length) return;
    fill(select, usable.map((m) => h('option', {value: m.id}, m.name)));
    element.hidden = false;
  }).catch((error) => showProblem(problems, error, 'The macros could not be loaded'));

  async function run(isPreview) {
    clearProblem(problems);
    const seen = current();
    const url = `/v1/tickets/${ticketId}/macros/${select.value}` +
      (isPreview ? '?preview=true' : '');
    try {
      const answer = await busy(form, () => app.api.post(url, null, {
        ifMatch: seen.version, idempotencyKey: isPreview ? undefined : newIdempotencyKey()}));
      const result = answer.body;
      if (isPreview) {
        fill(preview, h('p', null, `Would append ${result.events} event(s).`),
          result.body ? h('blockquote', {class: 'message-body'}, result.body) : null);
        return;
      }
      fill(preview, h('p', null, `Applied: ${result.events} event(s).`));
      announce('Macro applied');
      applied(result.ticket);
    } catch (error) {
      showProblem(problems, error, error.status === 412
        ? 'Someone changed the ticket meanwhile: it is shown as it is now'
        : 'The macro was not applied');
      if (error.status === 412) applied(null);
    }
  }

  previewButton.addEventListener('click', () => run(true));
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    run(false);
  });
  return element;
}

/** Canned replies for the reply box: a field that offers them by name as the agent
 * types; choosing one puts its text, rendered for the ticket, into ``textarea``. */
export function cannedReplies(app, ticketId, textarea) {
  if (!app.session.may('GET /v1/macros')) return null;
  const list = h('datalist', {id: 'canned-replies'});
  const input = h('input', {id: 'canned-reply', type: 'text', list: 'canned-replies',
                            autocomplete: 'off', placeholder: 'Type a canned reply\u2019s name'});
  const element = h('div', {class: 'canned', hidden: true},
    h('label', {for: 'canned-reply'}, 'Canned reply'), input, list);
  let canned = [];
  macros(app).then((all) => {
    canned = all.filter((m) => m.canned);
    fill(list, canned.map((m) => h('option', {value: m.name})));
    element.hidden = !canned.length;
  }).catch(() => {});
  input.addEventListener('change', async () => {
    const chosen = canned.find((m) => m.name === input.value);
    if (!chosen) return;
    // The preview renders the placeholders for this ticket and changes nothing.
    const answer = await app.api.post(
      `/v1/tickets/${ticketId}/macros/${chosen.id}?preview=true`, null);
    textarea.value = answer.body.body ?? '';
    input.value = '';
    textarea.focus();
  });
  return element;
}

/** The queue's sidebar of saved views: each opens the queue with its filters. */
export function savedViewsNav(app) {
  if (!app.session.may('GET /v1/views')) return null;
  const items = h('ul', {class: 'saved-views'});
  const element = h('nav', {class: 'views-box', 'aria-label': 'Saved views', hidden: true},
    h('h2', null, 'Views'), items);
  app.api.get('/v1/views', {limit: 100}).then((answer) => {
    const views = answer.body.data;
    fill(items, views.map((v) => {
      const params = new URLSearchParams(Object.entries(v.filters).map(
        ([name, value]) => [name, Array.isArray(value) ? value.join(',') : value]));
      return h('li', null, h('a', {href: `#/queue?${params}`}, v.name),
        v.owner_id ? null : h('span', {class: 'badge'}, 'shared'));
    }));
    element.hidden = !views.length;
  }).catch(() => {});
  return element;
}
