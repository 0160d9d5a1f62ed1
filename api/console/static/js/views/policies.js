// Admin: the tenant's SLA policies (/v1/sla-policies), listed in the order they are
// tried (by position, then oldest first, the default last; the first whose conditions
// all hold is a ticket's). Each is a form: name, conditions, a target per metric in
// hours, the calendar; saved with If-Match on the version shown. The order is changed by
// moving a policy up or down: one PUT /v1/sla-policies/order with the whole new order
// and the version of each policy shown, all or nothing. "Move open clocks here" is POST
// .../apply; "Delete" is DELETE with If-Match (not the default; the open clocks on a
// deleted policy keep their targets). A refusal's messages stand next to the inputs
// they name.

import {newIdempotencyKey} from '../api.js';
import {announce, clearProblem, fill, h, showProblem} from '../dom.js';
import {dateTime, duration} from '../format.js';
import {conditionsEditor} from './conditions.js';
import {FieldErrors, actionForm, all, deleteForm, field} from './forms.js';

const HOUR = 3_600_000;
/** The targets a policy may set, as the API names them, in the order of a ticket's
 * clocks. */
export const TARGETS = [
  ['first_reply_ms', 'First reply'], ['next_reply_ms', 'Next reply'],
  ['periodic_update_ms', 'Periodic update'], ['requester_wait_ms', 'Requester wait'],
  ['agent_work_ms', 'Agent work'], ['resolution_ms', 'Resolution'],
];

/** The order the API tries policies in. */
export function tried(policies) {
  return [...policies].sort((a, b) => (a.default - b.default) || (a.position - b.position)
    || a.created_at.localeCompare(b.created_at) || a.id.localeCompare(b.id));
}

function targetsSummary(policy) {
  const set = TARGETS.filter(([k]) => policy.targets[k]);
  return set.length ? set.map(([k, text]) => `${text.toLowerCase()} ${duration(policy.targets[k])}`)
    .join(', ') : 'no targets';
}

/** The inputs of a policy (``policy`` null: a new one), the body they make, and where
 * each part of a refusal goes. */
function policyInputs(app, key, policy, calendars, editable, firstOne) {
  const errors = new FieldErrors();
  const name = errors.place('name', h('input', {id: `${key}-name`, type: 'text',
    autocomplete: 'off', value: policy?.name ?? '', readonly: !editable}));
  const position = errors.place('position', h('input', {id: `${key}-position`, type: 'number',
    min: 0, step: 1, value: policy?.position ?? 0, readonly: !editable}));
  const isDefault = policy?.default ?? firstOne;
  const defaultBox = policy ? null : errors.place('default', h('input', {id: `${key}-default`,
    type: 'checkbox', checked: isDefault}));
  const conditions = conditionsEditor(app, key, policy?.conditions ?? [], errors, editable);
  const targets = TARGETS.map(([k, text]) => [k, errors.place(`targets.${k}`, h('input', {
    id: `${key}-${k}`, type: 'number', min: 0, step: 'any', readonly: !editable,
    value: policy?.targets[k] ? policy.targets[k] / HOUR : '',
    'aria-describedby': `${key}-targets-hint`, 'data-label': text}))]);
  const calendar = errors.place('calendar_id', h('select', {id: `${key}-calendar`,
    disabled: !editable},
  h('option', {value: ''}, 'None: every hour of the day counts'),
  calendars.map((c) => h('option', {value: c.id, selected: policy?.calendar_id === c.id},
    c.name)),
  policy?.calendar_id && !calendars.some((c) => c.id === policy.calendar_id)
    ? h('option', {value: policy.calendar_id, selected: true},
      `calendar ${policy.calendar_id.slice(0, 8)}`) : null));
  // A default has no conditions and no place in the order: those inputs go with it.
  const rules = h('div', {class: 'policy-rules', hidden: isDefault},
    field(`${key}-position`, 'Position', position,
      'lower is tried first; equal positions oldest first'),
    conditions.element);
  defaultBox?.addEventListener('change', () => { rules.hidden = defaultBox.checked; });
  const controls = [
    field(`${key}-name`, 'Name', name),
    policy?.default ? h('p', {class: 'help'}, 'The default: it has no conditions and '
      + 'holds for every ticket no other policy matches.') : null,
    defaultBox ? h('div', {class: 'field'}, h('label', {class: 'check'}, defaultBox,
      'The default policy (no conditions; a tenant\u2019s first policy must be it)')) : null,
    policy?.default ? null : rules,
    h('fieldset', {class: 'targets'}, h('legend', null, 'Targets (hours)'),
      h('p', {class: 'hint', id: `${key}-targets-hint`},
        'business hours of the calendar; empty: not measured'),
      targets.map(([k, input]) => field(input.id, input.dataset.label, input))),
    field(`${key}-calendar`, 'Calendar', calendar),
  ];
  function body() {
    const out = {
      name: name.value.trim(),
      targets: Object.fromEntries(targets.map(([k, input]) => [k, input.value === '' ? null
        : Math.round(Number(input.value) * HOUR)])),
      calendar_id: calendar.value || null,
    };
    const asDefault = policy ? policy.default : defaultBox.checked;
    if (!asDefault) {
      out.position = Number(position.value || 0);
      out.conditions = conditions.value();
    }
    if (!policy) out.default = asDefault;
    return out;
  }
  return {controls, body, errors};
}

function policyForm(app, policy, rank, calendars, reload) {
  const editable = app.session.may('PATCH /v1/sla-policies/{policy_id}');
  const key = `pol-${policy.id.slice(0, 8)}`;
  const {controls, body, errors} = policyInputs(app, key, policy, calendars, editable, false);
  const saved = h('p', {class: 'saved', role: 'status'});
  const parts = [actionForm(`Policy ${policy.name}`, [...controls, saved,
    editable ? h('button', {type: 'submit', class: 'primary'}, 'Save the policy') : null],
  async () => {
    const done = await app.api.patch(`/v1/sla-policies/${policy.id}`, body(),
      {ifMatch: policy.version, idempotencyKey: newIdempotencyKey()});
    announce(`Policy ${done.body.name} saved`);
    await reload(done.body.id);
  }, {errors, reread: () => reload(policy.id)})];
  if (app.session.may('POST /v1/sla-policies/{policy_id}/apply')) {
    const applied = h('p', {class: 'saved', role: 'status'});
    parts.push(actionForm(`Move open clocks onto ${policy.name}`, [
      h('p', {class: 'help'}, 'A change applies to clocks that start after it. This moves '
        + 'the open clocks of the tickets this policy matches onto its current version now.'),
      h('button', {type: 'submit'}, 'Move open clocks here'), applied], async () => {
      const done = await app.api.post(`/v1/sla-policies/${policy.id}/apply`, {},
        {idempotencyKey: newIdempotencyKey()});
      fill(applied, `${done.body.tickets} ticket${done.body.tickets === 1 ? '' : 's'} moved `
        + `onto version ${done.body.policy_version}.`);
      announce(applied.textContent);
    }));
  }
  if (!policy.default && app.session.may('DELETE /v1/sla-policies/{policy_id}')) {
    parts.push(deleteForm(app, {
      record: policy, kind: 'policy', name: policy.name,
      path: `/v1/sla-policies/${policy.id}`, reload,
      help: 'No ticket is matched to it from then on. Open clocks on it keep its targets '
        + 'until their ticket is matched again.'}));
  }
  return h('details', {class: 'admin-item', dataset: {id: policy.id}},
    h('summary', null, `${rank}. ${policy.name}`, policy.default
      ? h('span', {class: 'badge'}, 'default') : null, ' ',
    h('span', {class: 'hint'}, `${targetsSummary(policy)} · version ${policy.version} · `
      + `changed ${dateTime(policy.updated_at)}`)),
    parts);
}

/** Move the policy at ``from`` of ``order`` (the non-default ones, as tried) to ``to``:
 * the whole new order, the default last, in one request naming the version of each
 * policy shown (the API renumbers the positions 10, 20, 30...). */
async function move(app, order, defaults, from, to) {
  const moved = [...order];
  const [policy] = moved.splice(from, 1);
  moved.splice(to, 0, policy);
  await app.api.put('/v1/sla-policies/order',
    {policies: [...moved, ...defaults].map((p) => ({id: p.id, version: p.version}))},
    {idempotencyKey: newIdempotencyKey()});
}

function orderList(app, policies, problems, reload) {
  const order = policies.filter((p) => !p.default);
  const defaults = policies.filter((p) => p.default);
  const movable = app.session.may('PUT /v1/sla-policies/order') && order.length > 1;
  const step = (i, to, text) => h('button', {type: 'button', class: 'quiet',
    disabled: to < 0 || to >= order.length, 'aria-label': `${text}: ${order[i].name}`,
    onclick: async (event) => {
      clearProblem(problems);
      event.target.disabled = true;
      try {
        await move(app, order, defaults, i, to);
        announce(`${order[i].name} moved ${text.toLowerCase()}`);
      } catch (error) {
        showProblem(problems, error, 'The order was not changed');
      }
      await reload();
    }}, text);
  return h('section', {class: 'policy-order', 'aria-labelledby': 'policy-order-title'},
    h('h2', {id: 'policy-order-title'}, 'The order they are tried in'),
    h('ol', null, policies.map((p) => {
      const i = order.indexOf(p);
      return h('li', {dataset: {id: p.id}}, p.name, p.default ? ' (the default, always last)'
        : null, movable && i >= 0 ? [' ', step(i, i - 1, 'Move up'), step(i, i + 1, 'Move down')]
        : null);
    })));
}

export async function policiesPage(app, body) {
  const problems = h('div', {class: 'problems', hidden: true});
  const order = h('div');
  const list = h('div', {class: 'admin-list'});
  const creating = h('div');
  let calendars = [];
  async function load(open) {
    const [policies, known] = await Promise.all([all(app.api, '/v1/sla-policies'),
      app.session.may('GET /v1/calendars') ? all(app.api, '/v1/calendars') : [],
      app.directory.load(open !== undefined)]);
    calendars = known;
    const sorted = tried(policies);
    fill(order, sorted.length ? orderList(app, sorted, problems, load) : null);
    fill(list, h('h2', null, 'Policies'), sorted.length
      ? sorted.map((p, i) => policyForm(app, p, i + 1, calendars, load))
      : h('p', {class: 'help'}, 'No SLA policies: clocks run on the settings\u2019 targets '
        + '(Admin: Settings). The first policy must be the default.'));
    if (open) {
      const item = list.querySelector(`[data-id="${open}"]`);
      if (item) item.open = true;
    }
    fill(creating, app.session.may('POST /v1/sla-policies') ? createForm(!sorted.length) : null);
  }
  function createForm(firstOne) {
    const {controls, body: made, errors} = policyInputs(app, 'pol-new', null, calendars, true,
      firstOne);
    return actionForm('Create an SLA policy', [h('h2', null, 'Create an SLA policy'),
      ...controls, h('button', {type: 'submit', class: 'primary'}, 'Create the policy')],
    async () => {
      const done = await app.api.post('/v1/sla-policies', made(),
        {idempotencyKey: newIdempotencyKey()});
      announce(`Policy ${done.body.name} created`);
      await load(done.body.id);
    }, {errors});
  }
  fill(body, problems, order, list, creating);
  await load();
}
