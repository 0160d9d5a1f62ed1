// The parts the admin screens build their forms from: a labelled field, a form that
// runs its work busy and shows the API's refusal in the form, and the messages of a
// validation error placed next to the inputs they name. Nothing a refusal says is left
// out: what no input of the form answers for stays in the form's own problem box.

import {newIdempotencyKey} from '../api.js';
import {announce, clearProblem, h, onSubmit, showProblem} from '../dom.js';

/** Every row of a keyset-paged list (at most 20 pages of 100). */
export async function all(api, path) {
  const rows = [];
  let cursor = null;
  for (let page = 0; page < 20; page += 1) {
    const answer = (await api.get(path, {limit: 100, cursor})).body;
    rows.push(...answer.data);
    cursor = answer.next_cursor;
    if (!cursor) break;
  }
  return rows;
}

/** A labelled input, with a hint under it. */
export function field(id, text, input, hint) {
  return h('div', {class: 'field'}, h('label', {for: id}, text), input,
    hint ? h('span', {class: 'hint', id: `${id}-hint`}, hint) : null);
}

/** Where the messages of a 422 go: ``places`` maps a part of the body, as the API's
 * ``loc`` names it without "body" ("targets.first_reply_ms", "hours.weekly.0"), to
 * the input that holds it. A message goes to the input of the longest part its ``loc``
 * begins with (a holiday's index, a shift of a day, lands on the input of the list). */
export class FieldErrors {
  constructor() {
    this.places = new Map();
    this.shown = [];
  }

  /** ``input`` holds the part ``path`` of the body (a string or a list of parts). */
  place(path, input) {
    this.places.set(Array.isArray(path) ? path.join('.') : path, input);
    return input;
  }

  /** Forget the inputs of every part under ``prefix`` (a list's rows, drawn again). */
  forget(prefix) {
    for (const path of [...this.places.keys()]) {
      if (path === prefix || path.startsWith(`${prefix}.`)) this.places.delete(path);
    }
  }

  clear() {
    for (const {input, note, describedBy} of this.shown) {
      note.remove();
      input.removeAttribute('aria-invalid');
      if (describedBy) input.setAttribute('aria-describedby', describedBy);
      else input.removeAttribute('aria-describedby');
    }
    this.shown = [];
  }

  /** Mark the inputs the error's fields name, each with its message beside it. */
  show(error) {
    const fields = Array.isArray(error?.problem?.errors) ? error.problem.errors : [];
    fields.forEach((f, i) => {
      const loc = (f.loc ?? []).map(String);
      const parts = loc[0] === 'body' ? loc.slice(1) : loc;
      for (let n = parts.length; n > 0; n -= 1) {
        const input = this.places.get(parts.slice(0, n).join('.'));
        if (!input) continue;
        // The message only: the part it names is this input (the form's problem box
        // lists every part by its full name).
        const note = h('p', {class: 'field-error', id: `${input.id || 'input'}-error-${i}`},
          f.msg ?? '');
        const describedBy = input.getAttribute('aria-describedby');
        input.setAttribute('aria-invalid', 'true');
        input.setAttribute('aria-describedby', [describedBy, note.id].filter(Boolean).join(' '));
        input.after(note);
        this.shown.push({input, note, describedBy});
        break;
      }
    });
  }
}

/** A form that runs ``work`` on submit, busy while it runs; a refusal is shown in the
 * form with the API's words, and the inputs ``errors`` (a FieldErrors) knows get the
 * messages that name them. ``reread``: after a 412 (someone changed the record since
 * it was shown) the refusal offers to show the record as it is now. */
export function actionForm(label, children, work, {attrs = {}, errors = null, reread = null} = {}) {
  const problems = h('div', {class: 'problems', hidden: true});
  const form = h('form', {class: 'admin-form', 'aria-label': label, novalidate: true, ...attrs},
    children, problems);
  onSubmit(form, async () => {
    clearProblem(problems);
    errors?.clear();
    await work();
  }, (error) => {
    showProblem(problems, error, `${label}: not done`);
    errors?.show(error);
    if (error?.status === 412 && reread) {
      problems.firstChild.append(h('p', null, 'Someone else changed it since it was shown. ',
        h('button', {type: 'button', onclick: reread}, 'Show it as it is now'),
        ' (what was typed here is then lost).'));
    }
  });
  return form;
}

/** The form that deletes one versioned record of a `kind` ('calendar'): what deleting
 * it means (`help`), a button "Delete the <kind>", the DELETE of `path` under If-Match,
 * then `reload()`; after a 412, `reload(record.id)` shows it as it is now. `name` names
 * the record in the form's label and in what is announced. */
export function deleteForm(app, {record, kind, name, path, help, reload}) {
  return actionForm(`Delete ${name}`, [
    h('p', {class: 'help'}, help),
    h('button', {type: 'submit'}, `Delete the ${kind}`)], async () => {
    await app.api.request('DELETE', path,
      {ifMatch: record.version, idempotencyKey: newIdempotencyKey()});
    announce(`${kind[0].toUpperCase()}${kind.slice(1)} ${name} deleted`);
    await reload();
  }, {reread: () => reload(record.id)});
}
