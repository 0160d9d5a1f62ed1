// The conditions of an SLA policy, as rows of "field, operator, value": the ticket's
// priority, group, organization (the requester's), tags, channel and field values
// (docs/sla.md). The operators offered are those the API takes for each field; the API
// still judges every value, and a refusal's message lands on the row's input it names
// (``conditions.<i>.field``, ``.op``, ``.value``).

import {fill, h} from '../dom.js';
import {PRIORITIES, SOURCES, label} from '../format.js';

const IDS = ['is', 'is_not', 'is_set', 'not_set'];
const OPS = {
  priority: ['is', 'is_not', 'in', 'at_least'],
  channel: ['is', 'is_not', 'in'],
  group_id: IDS,
  organization_id: IDS,
  tags: ['contains', 'not_contains'],
};
const OP_WORDS = {is: 'is', is_not: 'is not', in: 'is one of', at_least: 'is at least',
  is_set: 'is set', not_set: 'is not set', contains: 'contains',
  not_contains: 'does not contain'};
const FIELD_WORDS = {priority: 'Priority', channel: 'Channel', group_id: 'Group',
  organization_id: 'Organization (the requester\u2019s)', tags: 'Tags'};

function opsOf(name) {
  return OPS[name] ?? IDS; // fields.<key>
}

/** The field a condition may test, with its title: the fixed ones and the tenant's
 * ticket fields. */
function fieldChoices(app) {
  return [...Object.entries(FIELD_WORDS),
    ...app.directory.fields.map((f) => [`fields.${f.key}`, `Field: ${f.title}`])];
}

/** The choices of a value that is one of a list, or null for a typed value. */
function valueChoices(app, name) {
  if (name === 'priority') return PRIORITIES.map((p) => [p, label(p)]);
  if (name === 'channel') return SOURCES.map((s) => [s, label(s)]);
  if (name === 'group_id') return app.directory.groupList().map((g) => [g.id, g.name]);
  if (name === 'organization_id') {
    return app.directory.organizationList().map((o) => [o.id, o.name]);
  }
  const defined = app.directory.fields.find((f) => `fields.${f.key}` === name);
  if (defined?.type === 'checkbox') return [['true', 'ticked'], ['false', 'not ticked']];
  if (defined?.type === 'dropdown') return defined.options.map((o) => [o.value, o.title]);
  return null;
}

/** A value as the API takes it: a list for "is one of", a number or a boolean for a
 * field of that type, nothing for "is set". */
function valueOf(app, c) {
  if (c.op === 'is_set' || c.op === 'not_set') return null;
  if (c.op === 'in') return String(c.value ?? '').split(',').map((v) => v.trim()).filter(Boolean);
  const defined = app.directory.fields.find((f) => `fields.${f.key}` === c.field);
  const text = String(c.value ?? '');
  if (defined?.type === 'number' && text.trim() !== '' && !Number.isNaN(Number(text))) {
    return Number(text);
  }
  if (defined?.type === 'checkbox') return text === 'true';
  return text;
}

function written(value) {
  return Array.isArray(value) ? value.join(', ') : value === null || value === undefined
    ? '' : String(value);
}

/** The editor: ``given`` the policy's conditions; ``errors`` a FieldErrors. Answers the
 * element and ``value()``, the conditions to send. */
export function conditionsEditor(app, key, given, errors, editable) {
  const rows = given.map((c) => ({field: c.field, op: c.op, value: written(c.value)}));
  const list = h('ol', {class: 'conditions'});
  const add = h('button', {type: 'button', disabled: !editable, onclick: () => {
    rows.push({field: 'priority', op: 'is', value: 'urgent'});
    draw();
    list.lastElementChild?.querySelector('select')?.focus();
  }}, 'Add a condition');
  errors.place('conditions', add);

  function row(c, i) {
    const id = `${key}-cond-${i}`;
    const choices = fieldChoices(app);
    if (!choices.some(([value]) => value === c.field)) choices.push([c.field, c.field]);
    const fieldSelect = h('select', {id: `${id}-field`, disabled: !editable,
      'aria-label': `Condition ${i + 1}: field`},
    choices.map(([value, text]) => h('option', {value, selected: value === c.field}, text)));
    fieldSelect.addEventListener('change', () => {
      c.field = fieldSelect.value;
      if (!opsOf(c.field).includes(c.op)) [c.op] = opsOf(c.field);
      c.value = '';
      draw();
    });
    const ops = opsOf(c.field).includes(c.op) ? opsOf(c.field) : [...opsOf(c.field), c.op];
    const opSelect = h('select', {id: `${id}-op`, disabled: !editable,
      'aria-label': `Condition ${i + 1}: operator`},
    ops.map((op) => h('option', {value: op, selected: op === c.op}, OP_WORDS[op] ?? op)));
    opSelect.addEventListener('change', () => {
      c.op = opSelect.value;
      draw();
    });
    const none = c.op === 'is_set' || c.op === 'not_set';
    const choicesOfValue = c.op === 'in' ? null : valueChoices(app, c.field);
    const valueLabel = `Condition ${i + 1}: value${c.op === 'in' ? ' (separated by commas)' : ''}`;
    let valueInput;
    if (choicesOfValue && !none) {
      if (c.value === '' && choicesOfValue.length) [[c.value]] = choicesOfValue;
      if (!choicesOfValue.some(([value]) => value === c.value)) {
        choicesOfValue.push([c.value, c.value]);
      }
      valueInput = h('select', {id: `${id}-value`, disabled: !editable, 'aria-label': valueLabel},
        choicesOfValue.map(([value, text]) => h('option', {value, selected: value === c.value},
          text)));
      valueInput.addEventListener('change', () => { c.value = valueInput.value; });
    } else {
      valueInput = h('input', {id: `${id}-value`, type: 'text', autocomplete: 'off',
        value: none ? '' : c.value, disabled: none || !editable, 'aria-label': valueLabel});
      valueInput.addEventListener('input', () => { c.value = valueInput.value; });
    }
    errors.place(`conditions.${i}.field`, fieldSelect);
    errors.place(`conditions.${i}.op`, opSelect);
    errors.place(`conditions.${i}.value`, valueInput);
    return h('li', {class: 'condition'}, fieldSelect, opSelect, valueInput,
      editable ? h('button', {type: 'button', class: 'quiet',
        'aria-label': `Remove condition ${i + 1}`, onclick: () => {
          rows.splice(i, 1);
          draw();
          add.focus();
        }}, 'Remove') : null);
  }

  function draw() {
    errors.forget('conditions');
    errors.place('conditions', add);
    fill(list, rows.map(row));
  }
  draw();
  const element = h('fieldset', {class: 'conditions-box'},
    h('legend', null, 'Conditions (all must hold)'),
    rows.length || editable ? null : h('p', {class: 'help'}, 'None: every ticket.'),
    list, editable ? add : null);
  return {element,
    value: () => rows.map((c) => ({field: c.field, op: c.op, value: valueOf(app, c)}))};
}
