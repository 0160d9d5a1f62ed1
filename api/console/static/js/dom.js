// Building the page: elements from plain values, never from HTML strings, so nothing
// a customer wrote can become markup (and the Content-Security-Policy forbids inline
// script and style anyway).

const SVG_NS = 'http://www.w3.org/2000/svg';

/** An element: h('a', {href: '#/x', class: 'y', onclick: fn}, 'text', child, [more]).
 * 'svg:rect' makes an SVG element. null, undefined and false attributes and children
 * are left out; true makes an empty attribute. */
export function h(tag, attrs, ...children) {
  const svg = tag.startsWith('svg:');
  const el = svg ? document.createElementNS(SVG_NS, tag.slice(4)) : document.createElement(tag);
  for (const [name, value] of Object.entries(attrs ?? {})) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith('on') && typeof value === 'function') {
      el.addEventListener(name.slice(2), value);
    } else if (name === 'dataset') {
      Object.assign(el.dataset, value);
    } else {
      el.setAttribute(name, value === true ? '' : String(value));
    }
  }
  append(el, children);
  return el;
}

export function append(el, children) {
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined || child === false) continue;
    el.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return el;
}

/** Replace an element's children. */
export function fill(el, ...children) {
  el.replaceChildren();
  return append(el, children);
}

/** Tell screen readers something happened (a polite live region). */
export function announce(text) {
  const region = document.getElementById('announcer');
  if (!region) return;
  region.textContent = '';
  // A new text node after a tick, so the same message twice is announced twice.
  setTimeout(() => { region.textContent = text; }, 50);
}

/** An API error as a person reads it: the problem's title and detail, its status and
 * code, and the fields a validation error names. Nothing is left out. */
export function problemView(error, context) {
  const p = error?.problem ?? {title: 'Error', detail: String(error?.message ?? error)};
  const parts = [];
  if (error?.status) parts.push(String(error.status));
  if (p.code) parts.push(p.code);
  const fields = Array.isArray(p.errors) ? p.errors : [];
  return h('div', {class: 'problem', role: 'alert'},
    h('p', null,
      context ? h('span', {class: 'problem-context'}, `${context}: `) : null,
      h('strong', {class: 'problem-title'}, p.title || 'Error')),
    p.detail ? h('p', {class: 'problem-detail'}, p.detail) : null,
    // The status and the code are for whoever reports it: kept, out of the way.
    parts.length ? h('details', {class: 'problem-code'}, h('summary', null, 'Details'),
      parts.join(' ')) : null,
    fields.length ? h('ul', {class: 'problem-fields'},
      fields.map((f) => h('li', null, `${(f.loc ?? []).join('.')}: ${f.msg ?? ''}`))) : null);
}

/** The page of something that is not there (or not the reader's to see): what, and
 * where to go instead. No form or panel of the thing is drawn. */
export function notFoundPage(what, detail, back) {
  return h('section', {class: 'not-found', 'aria-labelledby': 'not-found-title'},
    h('h1', {id: 'not-found-title', tabindex: -1}, `${what} not found`),
    h('p', null, detail),
    back ? h('p', null, back) : null);
}

/** Show ``error`` in ``slot`` (replacing what was there). */
export function showProblem(slot, error, context) {
  fill(slot, problemView(error, context));
  slot.hidden = false;
}

export function clearProblem(slot) {
  slot.replaceChildren();
  slot.hidden = true;
}

/** Run ``work`` when the form is submitted, in place of leaving the page, busy while it
 * runs; what it throws goes to ``failed`` (to show it beside the form). */
export function onSubmit(form, work, failed) {
  form.addEventListener('submit', async (event) => {
    event.preventDefault();
    try {
      await busy(form, work);
    } catch (error) {
      failed(error);
    }
  });
}

/** Disable a form's controls while ``work`` runs; the form says it is busy. A
 * disabled control loses the focus: the one that had it gets it back after, unless
 * the focus went elsewhere meanwhile (a new page's heading) or the control is gone. */
export async function busy(form, work) {
  const controls = [...form.querySelectorAll('button, input, select, textarea')];
  const before = controls.map((c) => c.disabled);
  const focused = document.activeElement;
  controls.forEach((c) => { c.disabled = true; });
  form.setAttribute('aria-busy', 'true');
  try {
    return await work();
  } finally {
    controls.forEach((c, i) => { c.disabled = before[i]; });
    form.removeAttribute('aria-busy');
    const lost = !document.activeElement || document.activeElement === document.body;
    if (lost && controls.includes(focused) && focused.isConnected) focused.focus();
  }
}
