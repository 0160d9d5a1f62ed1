// The queue as the desk stood at a past moment (docs/as-of.md): a date and time
// (``as_of``) or an event's seq (``as_of_seq``) in the address, the picker that sets
// it, and the banner that marks the view as past and read-only, with the way back to
// now. The list itself is the API's: GET /v1/tickets with the moment, newest first.

import {clearProblem, h, showProblem} from '../dom.js';
import {dateTime} from '../format.js';

/** The moment the address names ({as_of} or {as_of_seq}), or null: now. */
export function readMoment(params) {
  const seq = params.get('as_of_seq');
  if (seq) return {as_of_seq: seq};
  const at = params.get('as_of');
  return at ? {as_of: at} : null;
}

/** The moment in words: "Dec 2, 2026, 10:04" or "just after event 1234". */
export function momentWords(moment, seq) {
  const at = moment.as_of ? dateTime(moment.as_of) : null;
  const after = seq ?? moment.as_of_seq;
  if (at) return after !== undefined && after !== null ? `${at} (after event ${after})` : at;
  return `just after event ${after}`;
}

/** An instant as a datetime-local input's value, in this browser's zone, to the second. */
function localValue(iso) {
  const d = new Date(iso);
  if (Number.isNaN(d.getTime())) return '';
  const two = (n) => String(n).padStart(2, '0');
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())}`
    + `T${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

/** The picker: a date and time, or a seq; ``choose(moment)`` is called with the one
 * given, and a moment not given is said in ``problems`` (the view's). The way back to
 * now is the banner's. */
export function asOfPicker(moment, choose, problems) {
  const at = h('input', {id: 'as-of-at', type: 'datetime-local', step: 1,
                         value: moment?.as_of ? localValue(moment.as_of) : ''});
  const seq = h('input', {id: 'as-of-seq', type: 'number', min: 0, step: 1,
                          value: moment?.as_of_seq ?? '', inputmode: 'numeric'});
  const form = h('form', {class: 'as-of', 'aria-label': 'See the desk as it stood',
                          novalidate: true},
    h('div', {class: 'field'}, h('label', {for: 'as-of-at'}, 'As of (date and time)'), at),
    h('div', {class: 'field'}, h('label', {for: 'as-of-seq'}, 'or just after event'), seq),
    h('button', {type: 'submit'}, 'Show the desk then'));
  form.addEventListener('submit', (event) => {
    event.preventDefault();
    clearProblem(problems);
    if (seq.value.trim()) {
      choose({as_of_seq: seq.value.trim()});
      return;
    }
    const when = new Date(at.value);
    if (!at.value || Number.isNaN(when.getTime())) {
      showProblem(problems, {problem: {title: 'No moment given',
        detail: 'Pick a date and time, or give the number of an event.'}});
      return;
    }
    choose({as_of: when.toISOString()});
  });
  return form;
}

/** The banner over a past view: what moment it shows, that nothing can be changed
 * there, and the way back to now (``nowHref``). */
export function pastBanner(moment, nowHref) {
  const when = h('span', {class: 'past-when'}, momentWords(moment));
  const back = h('a', {href: nowHref, class: 'button'}, 'Back to now');
  const element = h('div', {class: 'past-view', role: 'note',
                            'aria-labelledby': 'past-view-title'},
    h('h2', {id: 'past-view-title'}, 'Past view: the desk as it stood at ', when),
    h('p', null, 'Read-only: nothing can be changed from here, and live changes are not '
      + 'shown. A ticket opens as it is now.'),
    h('p', null, back));
  return {element,
    /** The answer named its seq: say it. */
    named(seq) { when.textContent = momentWords(moment, seq); },
    /** The filters changed: now is the same filters, now. */
    nowHref(href) { back.setAttribute('href', href); }};
}
