// Admin screens: agents (invite, deactivate, reactivate), groups and their members,
// API keys (issue, shown once; revoke), the webhook endpoint, ticket fields (define,
// retitle, take in and out of use), SLA policies and calendars (policies.js,
// calendars.js), mailboxes (mailboxes.js), and the tenant's settings (SLA targets,
// business hours, holidays, widget origins, sweep windows). A page is listed when the
// caller may read it.
// Each screen is a client of the admin API like any other; every form shows the
// problem the API answered when it refuses.

import {newIdempotencyKey} from '../api.js';
import {announce, fill, h, showProblem} from '../dom.js';
import {PRIORITIES, dateTime, label} from '../format.js';
import {DAYS, calendarsPage} from './calendars.js';
import {actionForm, all, field} from './forms.js';
import {mailboxesPage} from './mailboxes.js';
import {policiesPage} from './policies.js';

const PAGES = [
  ['agents', 'Agents', 'GET /v1/agents'],
  ['groups', 'Groups', 'POST /v1/groups'],
  ['keys', 'API keys', 'GET /v1/api-keys'],
  ['webhook', 'Webhook', 'GET /v1/webhooks'],
  ['fields', 'Ticket fields', 'POST /v1/ticket-fields'],
  ['policies', 'SLA policies', 'GET /v1/sla-policies'],
  ['calendars', 'Calendars', 'GET /v1/calendars'],
  ['mailboxes', 'Mailboxes', 'GET /v1/mailboxes'],
  ['settings', 'Settings', 'GET /v1/settings'],
];
const HOUR = 3_600_000;

function agentsPage(app, body) {
  const list = h('table', {class: 'admin-table'});
  const issued = h('div', {class: 'issued', role: 'status'});
  async function load() {
    const agents = await all(app.api, '/v1/agents');
    fill(list, h('caption', null, 'Agents'),
      h('thead', null, h('tr', null, ['Name', 'E-mail', 'Role', 'Status', ''].map(
        (t) => h('th', {scope: 'col'}, t)))),
      h('tbody', null, agents.map((a) => h('tr', {dataset: {id: a.id}},
        h('td', null, a.name), h('td', null, a.email), h('td', null, label(a.role)),
        h('td', null, a.active ? 'Active' : 'Deactivated'),
        h('td', null, actionForm(`${a.active ? 'Deactivate' : 'Reactivate'} ${a.name}`,
          h('button', {type: 'submit'}, a.active ? 'Deactivate' : 'Reactivate'), async () => {
            await app.api.patch(`/v1/agents/${a.id}`, {active: !a.active},
              {idempotencyKey: newIdempotencyKey()});
            announce(`${a.name} ${a.active ? 'deactivated' : 'reactivated'}`);
            await app.directory.load(true);
            await load();
          }))))));
  }
  const email = h('input', {id: 'invite-email', type: 'email', autocomplete: 'off'});
  const name = h('input', {id: 'invite-name', type: 'text', autocomplete: 'off'});
  const role = h('select', {id: 'invite-role'},
    ['agent', 'admin'].map((r) => h('option', {value: r}, label(r))));
  const invite = actionForm('Invite an agent', [
    h('h2', null, 'Invite an agent'),
    field('invite-email', 'E-mail', email), field('invite-name', 'Name', name),
    field('invite-role', 'Role', role), h('button', {type: 'submit', class: 'primary'}, 'Invite')],
  async () => {
    const answer = (await app.api.post('/v1/agents/invitations',
      {email: email.value.trim(), name: name.value.trim(), role: role.value},
      {idempotencyKey: newIdempotencyKey()})).body;
    fill(issued, h('p', null, `Invitation for ${answer.email}, valid until `
      + `${dateTime(answer.expires_at)}. Pass this token on; it is shown only now:`),
    h('p', null, h('code', {class: 'token'}, answer.token)));
    email.value = '';
    name.value = '';
    announce(`Invited ${answer.email}`);
  });
  fill(body, invite, issued, list);
  return load();
}

function groupsPage(app, body) {
  const list = h('div', {class: 'admin-groups'});
  async function load() {
    await app.directory.load(true);
    const agents = app.directory.activeAgents();
    fill(list, app.directory.groupList().map((g) => {
      const boxes = agents.map((a) => h('input', {type: 'checkbox', value: a.id,
                                                  checked: g.members.includes(a.id)}));
      return actionForm(`Members of ${g.name}`, [
        h('fieldset', null, h('legend', null, g.name),
          boxes.map((b, i) => h('label', {class: 'check'}, b, agents[i].name))),
        h('button', {type: 'submit'}, 'Save members')], async () => {
        await app.api.patch(`/v1/groups/${g.id}`,
          {members: boxes.filter((b) => b.checked).map((b) => b.value)},
          {ifMatch: g.version, idempotencyKey: newIdempotencyKey()});
        announce(`Members of ${g.name} saved`);
        await load();
      });
    }));
  }
  const name = h('input', {id: 'group-name', type: 'text', autocomplete: 'off'});
  fill(body, actionForm('Create a group', [h('h2', null, 'Create a group'),
    field('group-name', 'Name', name), h('button', {type: 'submit', class: 'primary'}, 'Create')],
  async () => {
    await app.api.post('/v1/groups', {name: name.value.trim()},
      {idempotencyKey: newIdempotencyKey()});
    name.value = '';
    await load();
  }), list);
  return load();
}

function keysPage(app, body) {
  const list = h('table', {class: 'admin-table'});
  const issued = h('div', {class: 'issued', role: 'status'});
  async function load() {
    await app.directory.load(true);
    const keys = await all(app.api, '/v1/api-keys');
    fill(list, h('caption', null, 'API keys'),
      h('thead', null, h('tr', null, ['Name', 'Role', 'Acts as', 'Issued', ''].map(
        (t) => h('th', {scope: 'col'}, t)))),
      h('tbody', null, keys.map((k) => h('tr', {dataset: {id: k.id}},
        h('td', null, k.name), h('td', null, label(k.role)),
        h('td', null, k.agent_id ? app.directory.agentName(k.agent_id) : 'itself'),
        h('td', null, dateTime(k.created_at)),
        h('td', null, k.revoked_at ? `Revoked ${dateTime(k.revoked_at)}`
          : actionForm(`Revoke ${k.name}`, h('button', {type: 'submit'}, 'Revoke'), async () => {
            await app.api.request('DELETE', `/v1/api-keys/${k.id}`,
              {idempotencyKey: newIdempotencyKey()});
            announce(`${k.name} revoked`);
            await load();
          }))))));
  }
  const name = h('input', {id: 'key-name', type: 'text', autocomplete: 'off'});
  const role = h('select', {id: 'key-role'},
    ['agent', 'admin', 'intake', 'analyst', 'auditor'].map((r) => h('option', {value: r}, label(r))));
  const agent = h('select', {id: 'key-agent'}, h('option', {value: ''}, 'No one (the key itself)'),
    app.directory.activeAgents().map((a) => h('option', {value: a.id}, a.name)));
  fill(body, actionForm('Issue an API key', [h('h2', null, 'Issue an API key'),
    field('key-name', 'Name', name), field('key-role', 'Role', role),
    field('key-agent', 'Acts as', agent, 'needed for an agent key'),
    h('button', {type: 'submit', class: 'primary'}, 'Issue')], async () => {
    const answer = (await app.api.post('/v1/api-keys', {name: name.value.trim(),
      role: role.value, ...(agent.value ? {agent_id: agent.value} : {})},
    {idempotencyKey: newIdempotencyKey()})).body;
    fill(issued, h('p', null, `Key \u201c${answer.name}\u201d issued. Copy it now: it is `
      + 'shown only this once.'), h('p', null, h('code', {class: 'token'}, answer.secret)));
    name.value = '';
    await load();
  }), issued, list);
  return load();
}

async function webhookPage(app, body) {
  let current = null;
  try {
    current = (await app.api.get('/v1/webhooks')).body;
  } catch (error) {
    if (error.status !== 404) throw error;
  }
  const url = h('input', {id: 'hook-url', type: 'url', value: current?.url ?? ''});
  const secret = h('input', {id: 'hook-secret', type: 'password', autocomplete: 'off'});
  const types = h('input', {id: 'hook-types', type: 'text',
                            value: (current?.event_types ?? ['TicketOpened']).join(', ')});
  const enabled = h('input', {id: 'hook-enabled', type: 'checkbox',
                              checked: current ? current.enabled : true});
  fill(body, actionForm('Webhook endpoint', [h('h2', null, 'Webhook endpoint'),
    field('hook-url', 'URL', url),
    field('hook-secret', 'Signing secret', secret,
      current ? 'leave empty to keep the current one' : '16 characters or more'),
    field('hook-types', 'Event types', types, 'separated by commas'),
    h('label', {class: 'check'}, enabled, 'Enabled'),
    h('button', {type: 'submit', class: 'primary'}, 'Save')], async () => {
    await app.api.request('PUT', '/v1/webhooks', {body: {url: url.value.trim(),
      event_types: types.value.split(',').map((t) => t.trim()).filter(Boolean),
      enabled: enabled.checked, ...(secret.value ? {secret: secret.value} : {})},
    idempotencyKey: newIdempotencyKey()});
    secret.value = '';
    announce('Webhook saved');
  }));
}

const FIELD_TYPES = ['text', 'number', 'date', 'checkbox', 'dropdown', 'multiselect'];

/** Options written one per line as ``value: Title`` (the title defaults to the value). */
function parseOptions(text) {
  return text.split('\n').map((line) => line.trim()).filter(Boolean).map((line) => {
    const [value, ...title] = line.split(':');
    return {value: value.trim(), title: (title.join(':').trim() || value.trim())};
  });
}

function fieldsPage(app, body) {
  const list = h('div', {class: 'admin-fields'});
  async function load() {
    const fields = (await app.api.get('/v1/ticket-fields')).body.data;
    fill(list, h('table', {class: 'admin-table'}, h('caption', null, 'Ticket fields'),
      h('thead', null, h('tr', null, ['Title', 'Key', 'Type', 'Options', 'In use', ''].map(
        (t) => h('th', {scope: 'col'}, t)))),
      h('tbody', null, fields.map((f) => {
        const title = h('input', {type: 'text', value: f.title, 'aria-label': `Title of ${f.key}`});
        return h('tr', {dataset: {key: f.key}},
          h('td', null, actionForm(`Retitle ${f.key}`, [title,
            h('button', {type: 'submit'}, 'Save')], async () => {
            await app.api.patch(`/v1/ticket-fields/${f.key}`, {title: title.value.trim()},
              {ifMatch: f.version, idempotencyKey: newIdempotencyKey()});
            await load();
          })),
          h('td', null, f.key), h('td', null, f.type),
          h('td', null, f.options.filter((o) => o.active).map((o) => o.title).join(', ')),
          h('td', null, f.active ? 'Yes' : 'No'),
          h('td', null, actionForm(`${f.active ? 'Retire' : 'Restore'} ${f.key}`,
            h('button', {type: 'submit'}, f.active ? 'Take out of use' : 'Put in use'),
            async () => {
              await app.api.patch(`/v1/ticket-fields/${f.key}`, {active: !f.active},
                {ifMatch: f.version, idempotencyKey: newIdempotencyKey()});
              await load();
            })));
      }))));
    await app.directory.load(true);
  }
  const key = h('input', {id: 'field-new-key', type: 'text', autocomplete: 'off'});
  const title = h('input', {id: 'field-new-title', type: 'text', autocomplete: 'off'});
  const type = h('select', {id: 'field-new-type'},
    FIELD_TYPES.map((t) => h('option', {value: t}, t)));
  const options = h('textarea', {id: 'field-new-options', rows: 3});
  const required = h('select', {id: 'field-new-required'}, h('option', {value: ''}, 'Never'),
    h('option', {value: 'open'}, 'To open a ticket'), h('option', {value: 'solve'}, 'To solve it'));
  fill(body, actionForm('Define a ticket field', [h('h2', null, 'Define a ticket field'),
    field('field-new-key', 'Key', key, 'lower-case letters, digits and _; never reused'),
    field('field-new-title', 'Title', title), field('field-new-type', 'Type', type),
    field('field-new-options', 'Options', options,
      'dropdown and multiselect: one per line, as value: Title'),
    field('field-new-required', 'Needed', required),
    h('button', {type: 'submit', class: 'primary'}, 'Define')], async () => {
    await app.api.post('/v1/ticket-fields', {key: key.value.trim(), title: title.value.trim(),
      type: type.value, options: parseOptions(options.value),
      ...(required.value ? {required_on: required.value} : {})},
    {idempotencyKey: newIdempotencyKey()});
    key.value = '';
    title.value = '';
    options.value = '';
    announce('Field defined');
    await load();
  }), list);
  return load();
}

/** The settings document as a form: every key of it, sent back whole (PUT). */
async function settingsPage(app, body) {
  const answer = await app.api.get('/v1/settings');
  // Once the tenant has SLA policies they set the clocks, and a change of these
  // targets is refused (409 sla_settings_superseded): they are shown, not offered.
  const superseded = app.session.may('GET /v1/sla-policies')
    && (await app.api.get('/v1/sla-policies', {limit: 1})).body.data.length > 0;
  let doc = answer.body;
  let version = answer.etag;
  const hours = doc.business_hours;
  const use = h('input', {id: 'bh-use', type: 'checkbox', checked: Boolean(hours)});
  const zone = h('input', {id: 'bh-zone', type: 'text', value: hours?.timezone ?? 'UTC'});
  const days = DAYS.map((day, i) => {
    const [start, end] = hours?.weekly?.[i]?.[0] ?? ['', ''];
    return {day, start: h('input', {type: 'time', id: `bh-${i}-start`, value: start,
                                    'aria-label': `${day} from`}),
            end: h('input', {type: 'time', id: `bh-${i}-end`, value: end,
                             'aria-label': `${day} until`})};
  });
  const holidays = h('input', {id: 'bh-holidays', type: 'text',
                               value: (hours?.holidays ?? []).join(', ')});
  const targets = PRIORITIES.map((p) => ({p,
    first: h('input', {type: 'number', min: 0.01, step: 'any', id: `sla-${p}-first`,
                       value: doc.sla_targets[p].first_response_ms / HOUR}),
    resolve: h('input', {type: 'number', min: 0.01, step: 'any', id: `sla-${p}-resolve`,
                         value: doc.sla_targets[p].resolution_ms / HOUR})}));
  const pending = h('input', {id: 'sweep-pending', type: 'number', min: 1,
                              value: doc.sweep.pending_days});
  const solved = h('input', {id: 'sweep-solved', type: 'number', min: 1,
                             value: doc.sweep.solved_days});
  const origins = h('textarea', {id: 'widget-origins', rows: 3},
    (doc.widget_origins ?? []).join('\n'));
  const saved = h('p', {class: 'saved', role: 'status'});

  function collect() {
    const weekly = {};
    days.forEach((d, i) => {
      if (d.start.value && d.end.value) weekly[i] = [[d.start.value, d.end.value]];
    });
    return {...doc,
      business_hours: use.checked ? {timezone: zone.value.trim(), weekly,
        holidays: holidays.value.split(',').map((x) => x.trim()).filter(Boolean)} : null,
      sla_targets: Object.fromEntries(targets.map((t) => [t.p, {
        first_response_ms: Math.round(Number(t.first.value) * HOUR),
        resolution_ms: Math.round(Number(t.resolve.value) * HOUR)}])),
      sweep: {pending_days: Number(pending.value), solved_days: Number(solved.value)},
      widget_origins: origins.value.split('\n').map((x) => x.trim()).filter(Boolean)};
  }

  fill(body, actionForm('Tenant settings', [
    h('fieldset', null, h('legend', null, 'Business hours'),
      h('label', {class: 'check'}, use, 'SLA clocks run in business hours only'),
      field('bh-zone', 'Time zone', zone, 'such as Europe/Berlin'),
      h('table', {class: 'admin-table'}, h('caption', null, 'Weekly hours (empty: closed)'),
        h('tbody', null, days.map((d) => h('tr', null, h('th', {scope: 'row'}, d.day),
          h('td', null, d.start), h('td', null, d.end))))),
      field('bh-holidays', 'Holidays', holidays, 'dates YYYY-MM-DD, separated by commas')),
    h('fieldset', {disabled: superseded}, h('legend', null, 'SLA targets (hours)'),
      superseded ? h('p', {class: 'help'}, 'The tenant\u2019s SLA policies set the clocks '
        + 'now, not these targets: ', h('a', {href: '#/admin/policies'}, 'SLA policies'), '.')
        : null,
      h('table', {class: 'admin-table'}, h('thead', null, h('tr', null,
        ['Priority', 'First response', 'Resolution'].map((t) => h('th', {scope: 'col'}, t)))),
      h('tbody', null, targets.map((t) => h('tr', null, h('th', {scope: 'row'}, label(t.p)),
        h('td', null, t.first), h('td', null, t.resolve)))))),
    h('fieldset', null, h('legend', null, 'Sweep'),
      field('sweep-pending', 'Days before a pending ticket is solved', pending),
      field('sweep-solved', 'Days before a solved ticket is closed', solved)),
    field('widget-origins', 'Widget origins', origins, 'one per line; none turns the widget off'),
    saved, h('button', {type: 'submit', class: 'primary'}, 'Save settings')], async () => {
    const done = await app.api.request('PUT', '/v1/settings', {body: collect(),
      ifMatch: version, idempotencyKey: newIdempotencyKey()});
    doc = done.body;
    version = done.etag;
    fill(saved, 'Settings saved.');
    announce('Settings saved');
  }));
}

const RENDER = {agents: agentsPage, groups: groupsPage, keys: keysPage, webhook: webhookPage,
                fields: fieldsPage, policies: policiesPage, calendars: calendarsPage,
                mailboxes: mailboxesPage, settings: settingsPage};

export function adminView(app, params, page) {
  const pages = PAGES.filter(([, , needs]) => app.session.may(needs));
  const chosen = pages.find(([path]) => path === page) ?? pages[0];
  const problems = h('div', {class: 'problems', hidden: true});
  const body = h('div', {class: 'admin-body'});
  const element = h('section', {class: 'admin', 'aria-labelledby': 'admin-title'},
    h('h1', {id: 'admin-title', tabindex: -1}, `Admin: ${chosen[1]}`),
    h('nav', {class: 'quick-queues', 'aria-label': 'Admin'}, h('ul', null, pages.map(
      ([path, text]) => h('li', null, h('a', {href: `#/admin/${path}`,
        'aria-current': path === chosen[0] ? 'page' : null}, text))))),
    problems, body);
  Promise.resolve(RENDER[chosen[0]](app, body)).catch(
    (error) => showProblem(problems, error, `${chosen[1]} could not be loaded`));
  return {element, title: `Admin: ${chosen[1]}`};
}
