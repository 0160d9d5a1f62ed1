// Analytics for analysts and admins, from /v1/analytics (docs/analytics.md): first
// reply and resolution times (p50 and p90) by the day or week tickets were opened,
// volume per day, the backlog by state and age, SLA achievement per priority, and the
// tickets opened and solved split by a choice of priority, source, assignee, group or
// organization (group_by of /v1/analytics/summary, whose groups carry their names),
// with the satisfaction score and response rate in total and by that split.
// Each chart says how fresh its answer is (as_of_seq and lag): the read models are
// built asynchronously from the events.

import {chart} from '../charts.js';
import {clearProblem, fill, h, showProblem} from '../dom.js';
import {PRIORITIES, day, duration, hours, label, percent} from '../format.js';
import {now} from '../api.js';

const DAYS = 42;
const STATES = ['open', 'pending', 'on_hold'];
const AGES = ['lt_1d', '1d_3d', '3d_7d', 'gte_7d'];

function isoDay(ms) {
  return new Date(ms).toISOString().slice(0, 10);
}

function daysBetween(from, to) {
  const out = [];
  for (let t = Date.parse(`${from}T00:00:00Z`); t <= Date.parse(`${to}T00:00:00Z`);
       t += 86_400_000) {
    out.push(isoDay(t));
  }
  return out;
}

function freshness(answer) {
  // Plain words; the position in the event log is in a fold for whoever asks.
  return h('div', {class: `freshness${answer.lag ? ' behind' : ''}`},
    h('span', {class: 'freshness-words'},
      answer.lag ? `${answer.lag} recent change${answer.lag === 1 ? '' : 's'} not counted yet`
        : 'Up to date'),
    answer.rebuilding ? h('strong', null, ' \u2014 rebuilding: figures are partial') : null,
    h('details', {class: 'freshness-details'}, h('summary', null, 'Details'),
      `As of seq ${answer.as_of_seq}, lag ${answer.lag} event${answer.lag === 1 ? '' : 's'}`));
}

function hoursFormat(v) {
  return v < 10 ? `${Math.round(v * 10) / 10} h` : `${Math.round(v)} h`;
}

function panel(title, answer, ...content) {
  return h('section', {class: 'panel', 'aria-label': title}, freshness(answer), content);
}

function tiles(summary) {
  const t = summary.total;
  const tile = (name, value) => h('div', {class: 'tile'}, h('dt', null, name), h('dd', null, value));
  return h('dl', {class: 'tiles'},
    tile('Tickets opened', String(t.tickets)),
    tile('Solved', String(t.solved)),
    tile('First reply, median', duration(t.first_reply_ms.median)),
    tile('Resolution, median', duration(t.resolution_ms.median)),
    tile('Reopen rate', percent(t.reopen_rate)),
    tile('One-touch rate', percent(t.one_touch_rate)),
    tile('Satisfaction score', percent(t.satisfaction.score)),
    tile('Response rate', percent(t.satisfaction.response_rate)));
}

/** Spans of the range to take percentiles over: days for two weeks or less, else
 * weeks (or longer, for at most 13 spans) ending on the range's last day. A
 * percentile of a day with one ticket says little; one of a week says more. */
function spans(from, to) {
  const days = daysBetween(from, to);
  if (days.length <= 14) return days.map((d) => ({from: d, to: d, label: day(d)}));
  const size = 7 * Math.ceil(days.length / (7 * 13));
  const out = [];
  for (let end = days.length - 1; end >= 0; end -= size) {
    const start = Math.max(0, end - size + 1);
    out.unshift({from: days[start], to: days[end],
                 label: `${day(days[start])}–${day(days[end])}`});
  }
  return out;
}

/** The freshness of several answers together: the oldest of them. */
function oldest(answers) {
  return {as_of_seq: Math.min(...answers.map((a) => a.as_of_seq)),
          lag: Math.max(...answers.map((a) => a.lag)),
          rebuilding: answers.some((a) => a.rebuilding)};
}

function timesCharts(periods, answers) {
  const series = (metric) => [
    {name: 'Median (p50)', values: answers.map((a) => hours(a.total[metric].median))},
    {name: '90th percentile (p90)', values: answers.map((a) => hours(a.total[metric].p90))},
  ];
  const unit = periods.length && periods[0].from === periods[0].to ? 'day' : 'period';
  const labelOf = (i) => periods[i].label;
  const categories = periods.map((_, i) => i);
  return panel('Reply and resolution times', oldest(answers),
    h('p', {class: 'help'}, `Percentiles over the tickets opened in each ${unit}; a gap is a ` +
      `${unit} with no ticket that has the figure yet.`),
    h('div', {class: 'panel-row'},
      chart({kind: 'line', title: 'Time to first reply (p50 and p90)',
             description: 'Median and 90th percentile of the time to the first public agent ' +
               `reply, in hours, by the ${unit} tickets were opened.`,
             categories, series: series('first_reply_ms'), labelOf, format: hoursFormat}),
      chart({kind: 'line', title: 'Resolution time (p50 and p90)',
             description: 'Median and 90th percentile of the time from opening to the latest ' +
               `solve, in hours, by the ${unit} tickets were opened.`,
             categories, series: series('resolution_ms'), labelOf, format: hoursFormat})));
}

function volumeChart(volume, from, to) {
  const days = daysBetween(from, to);
  const byDay = new Map(volume.days.map((d) => [d.day, d]));
  const series = ['created', 'solved', 'reopened', 'breached'].map((k) => ({
    name: {created: 'Created', solved: 'Solved', reopened: 'Reopened',
           breached: 'SLA breaches'}[k],
    values: days.map((d) => byDay.get(d)?.[k] ?? 0)}));
  return panel('Volume', volume, chart({
    kind: 'line', title: 'Volume per day',
    description: 'Tickets created, solved and reopened, and SLA breaches, per UTC day.',
    categories: days, series, labelOf: day, format: (v) => String(Math.round(v)),
    integer: true, width: 960}));
}

function backlogChart(backlog) {
  const count = (state, age) => backlog.rows.filter((r) => r.state === state && r.age === age)
    .reduce((sum, r) => sum + r.tickets, 0);
  return panel('Backlog', backlog,
    h('p', {class: 'help'}, `${backlog.total} open tickets (open, pending or on hold) now.`),
    chart({kind: 'stacked', title: 'Backlog by state and age',
           description: 'Open work now, stacked by state, in buckets of age since opening.',
           categories: AGES, labelOf: label, format: (v) => String(Math.round(v)), integer: true,
           series: STATES.map((s) => ({name: label(s), values: AGES.map((a) => count(s, a))}))}));
}

function slaChart(byPriority) {
  const groups = new Map(byPriority.groups.map((g) => [g.key, g]));
  const metrics = ['first_response', 'next_reply', 'resolution'];
  return panel('SLA achievement', byPriority, chart({
    kind: 'bars', title: 'SLA achievement per priority',
    description: 'Share of the tickets opened in the range whose clock met its target, ' +
      'per priority and SLA metric.',
    categories: PRIORITIES, labelOf: label, yMax: 100, format: (v) => `${Math.round(v)}%`,
    series: metrics.map((m) => ({name: label(m), values: PRIORITIES.map((p) => {
      const share = groups.get(p)?.sla_achievement[m];
      return share === null || share === undefined ? null : share * 100;
    })}))}));
}

const SPLITS = {priority: 'Priority', source: 'Source', assignee: 'Assignee', group: 'Group',
                organization: 'Organization'};

/** A split's key as people read it: the name the answer carries for an assignee, a
 * group or an organization (an analyst may not list them, and reads them there), else
 * the name this role's directory has, else a short id. */
function splitLabel(app, by, key, name) {
  if (by === 'assignee') {
    return key === 'none' ? 'Unassigned' : name ?? app.directory.agentName(key);
  }
  if (by === 'group') return key === 'none' ? 'No group' : name ?? app.directory.groupName(key);
  if (by === 'organization') {
    return key === 'none' ? 'No organization' : name ?? app.directory.organizationName(key);
  }
  return label(key);
}

function splitChart(app, by, summary) {
  const rows = [...summary.groups].sort((a, b) => b.tickets - a.tickets);
  const keys = rows.map((g) => g.key);
  const names = new Map(rows.map((g) => [g.key, g.name]));
  return panel(`By ${SPLITS[by].toLowerCase()}`, summary, chart({
    kind: 'bars', title: `Tickets opened and solved by ${SPLITS[by].toLowerCase()}`,
    description: `Tickets opened in the range, and those of them solved, per ${
      SPLITS[by].toLowerCase()} (as each ticket is now).`,
    categories: keys, labelOf: (k) => splitLabel(app, by, k, names.get(k)),
    format: (v) => String(Math.round(v)), integer: true,
    width: 960,
    series: [{name: 'Opened', values: rows.map((g) => g.tickets)},
             {name: 'Solved', values: rows.map((g) => g.solved)}]}));
}

/** Satisfaction per split: of the solved tickets, the share rated (response rate)
 * and the share of those rated good (score), by their latest rating. */
function satisfactionTable(app, by, summary) {
  const rows = [...summary.groups].sort((a, b) => b.tickets - a.tickets);
  return panel(`Satisfaction by ${SPLITS[by].toLowerCase()}`, summary,
    h('table', {class: 'satisfaction-table'},
      h('caption', null, `Satisfaction by ${SPLITS[by].toLowerCase()}: good / rated, and ` +
        'rated / solved'),
      h('thead', null, h('tr', null, h('th', {scope: 'col'}, SPLITS[by]),
        h('th', {scope: 'col'}, 'Solved'), h('th', {scope: 'col'}, 'Rated'),
        h('th', {scope: 'col'}, 'Score'), h('th', {scope: 'col'}, 'Response rate'))),
      h('tbody', null, rows.map((g) => h('tr', null,
        h('th', {scope: 'row'}, splitLabel(app, by, g.key, g.name)),
        h('td', null, String(g.solved)), h('td', null, String(g.satisfaction.rated)),
        h('td', null, percent(g.satisfaction.score)),
        h('td', null, percent(g.satisfaction.response_rate)))))));
}

export function analyticsView(app, params) {
  const to = params.get('to') || isoDay(now());
  const from = params.get('from') || isoDay(Date.parse(`${to}T00:00:00Z`) - (DAYS - 1) * 86_400_000);
  const problems = h('div', {class: 'problems', hidden: true});
  const body = h('div', {class: 'analytics-body', 'aria-busy': 'true'},
    h('p', {class: 'loading'}, 'Loading the figures…'));
  const fromInput = h('input', {id: 'range-from', name: 'from', type: 'date', value: from,
                                required: true});
  const toInput = h('input', {id: 'range-to', name: 'to', type: 'date', value: to, required: true});
  const by = SPLITS[params.get('by')] ? params.get('by') : 'group';
  const byInput = h('select', {id: 'range-by', name: 'by'}, Object.entries(SPLITS)
    .map(([value, text]) => h('option', {value, selected: value === by}, text)));
  const form = h('form', {class: 'range', 'aria-label': 'Date range'},
    h('div', {class: 'field'}, h('label', {for: 'range-from'}, 'From (UTC day)'), fromInput),
    h('div', {class: 'field'}, h('label', {for: 'range-to'}, 'To (UTC day)'), toInput),
    h('div', {class: 'field'}, h('label', {for: 'range-by'}, 'Split by'), byInput),
    h('button', {type: 'submit'}, 'Show'));
  byInput.addEventListener('change', () => form.requestSubmit());
  form.addEventListener('submit', (e) => {
    e.preventDefault();
    app.navigate(`#/analytics?from=${fromInput.value}&to=${toInput.value}&by=${byInput.value}`);
  });
  const element = h('section', {class: 'analytics', 'aria-labelledby': 'analytics-title'},
    h('h1', {id: 'analytics-title', tabindex: -1}, 'Analytics'),
    h('p', {class: 'help'}, 'Tickets opened from ', h('strong', null, day(from)), ' to ',
      h('strong', null, day(to)), ' (UTC), as the analytics read models have them.'),
    form, problems, body);

  (async () => {
    const range = {from, to};
    await app.directory.load().catch(() => {}); // names where the role may read them
    const periods = spans(from, to);
    try {
      const [byPriority, split, volume, backlog, ...times] = await Promise.all([
        app.api.get('/v1/analytics/summary', {...range, group_by: 'priority'}),
        app.api.get('/v1/analytics/summary', {...range, group_by: by}),
        app.api.get('/v1/analytics/volume', range),
        app.api.get('/v1/analytics/backlog'),
        ...periods.map((p) => app.api.get('/v1/analytics/summary', {from: p.from, to: p.to})),
      ]);
      clearProblem(problems);
      fill(body,
        panel('Totals', byPriority.body, tiles(byPriority.body)),
        timesCharts(periods, times.map((t) => t.body)),
        volumeChart(volume.body, from, to),
        splitChart(app, by, split.body),
        satisfactionTable(app, by, split.body),
        h('div', {class: 'panel-row'}, backlogChart(backlog.body), slaChart(byPriority.body)));
    } catch (error) {
      fill(body);
      showProblem(problems, error, 'The figures could not be loaded');
    } finally {
      body.removeAttribute('aria-busy');
    }
  })();

  return {element, title: 'Analytics'};
}
