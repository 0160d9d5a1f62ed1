// The tenant's ticket fields open to customers (GET /v1/portal/ticket-fields): the
// controls of a new ticket's form, drawn by each field's type, and a ticket's values
// as the customer reads them. The API checks every value as it checks staff-set ones
// (a refusal names fields.<key>, shown with the rest of the problem); the controls only
// help: a native control per type, `required` on the fields a new ticket needs.

import {h} from '/console/js/dom.js';
import {t} from './i18n.js';

function labelled(id, d, control) {
  control.id = id;
  if (d.required) control.required = true;
  return h('p', {class: 'field'},
    h('label', {for: id}, d.title, d.required ? ` (${t('required')})` : ''), control);
}

/** One field's control and how to read its value (undefined: none given). */
function control(d, id) {
  switch (d.type) {
    case 'checkbox': {
      const box = h('input', {type: 'checkbox', id});
      return {element: h('p', {class: 'field check'}, h('label', {for: id}, box, ' ', d.title)),
              value: () => box.checked};
    }
    case 'dropdown': {
      const select = h('select', null, h('option', {value: ''}, t('choose')),
        d.options.map((o) => h('option', {value: o.value}, o.title)));
      return {element: labelled(id, d, select), value: () => select.value || undefined};
    }
    case 'multiselect': {
      const boxes = d.options.map((o, i) => h('input', {type: 'checkbox', id: `${id}-${i}`,
                                                        value: o.value}));
      const element = h('fieldset', {class: 'field', id},
        h('legend', null, d.title, d.required ? ` (${t('required')})` : ''),
        boxes.map((b, i) => h('label', {for: b.id, class: 'check'}, b, ' ', d.options[i].title)));
      const chosen = () => boxes.filter((b) => b.checked).map((b) => b.value);
      return {element, value: () => (chosen().length ? chosen() : undefined)};
    }
    default: {  // text, number, date
      const input = d.type === 'text' ? h('input', {type: 'text', maxlength: 1000})
        : h('input', {type: d.type, step: d.type === 'number' ? 1 : null});
      const read = () => {
        if (input.value === '') return undefined;
        return d.type === 'number' ? Number(input.value) : input.value;
      };
      return {element: labelled(id, d, input), value: read};
    }
  }
}

/** The form part for ``defs``: its element, and the values given, by key. */
export function fieldControls(defs) {
  const controls = defs.map((d) => ({key: d.key, ...control(d, `field-${d.key}`)}));
  return {
    element: controls.length ? h('div', {class: 'ticket-fields'}, controls.map((c) => c.element))
      : null,
    values() {
      const out = {};
      for (const c of controls) {
        const v = c.value();
        if (v !== undefined) out[c.key] = v;
      }
      return out;
    },
  };
}

function shown(d, value) {
  const title = (v) => d?.options.find((o) => o.value === v)?.title ?? v;
  if (typeof value === 'boolean') return value ? t('yes') : t('no');
  if (Array.isArray(value)) return value.map(title).join(', ');
  return String(title(value));
}

/** A ticket's values (``fields`` of GET /v1/portal/tickets/{id}), titled by ``defs``
 * (a field no longer listed shows its key). */
export function fieldValues(defs, values) {
  const keys = Object.keys(values ?? {}).sort();
  if (!keys.length) return null;
  const byKey = new Map(defs.map((d) => [d.key, d]));
  return h('dl', {class: 'ticket-field-values', 'aria-label': t('details')},
    keys.map((k) => [h('dt', null, byKey.get(k)?.title ?? k),
      h('dd', {dataset: {key: k}}, shown(byKey.get(k), values[k]))]));
}
