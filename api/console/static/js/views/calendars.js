// Admin: the tenant's calendars (/v1/calendars), the business hours SLA policies count
// on: a time zone, shifts per weekday, holidays. Each calendar is a form of its own,
// saved with If-Match on the version shown; a new version of the hours is what clocks
// starting from then on run on (docs/sla.md). "Delete" is DELETE with If-Match; a
// calendar an SLA policy runs on is refused, the refusal naming the policies. A
// refusal's messages stand next to the inputs they name.

import {newIdempotencyKey} from '../api.js';
import {announce, fill, h} from '../dom.js';
import {dateTime} from '../format.js';
import {FieldErrors, actionForm, all, deleteForm, field} from './forms.js';

export const DAYS = ['Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday',
  'Sunday'];

/** Shifts as written, "09:00-12:00, 13:00-17:00", to the API's [["09:00", "12:00"], ...].
 * Nothing is judged here: the API says what is wrong, and where. */
function parseShifts(text) {
  return text.split(',').map((s) => s.trim()).filter(Boolean)
    .map((shift) => shift.split('-').map((t) => t.trim()));
}

function writeShifts(shifts) {
  return (shifts ?? []).map(([start, end]) => `${start}-${end}`).join(', ');
}

/** The inputs of a calendar (``calendar`` null: a new one), the body they make, and
 * where each part of a refusal goes. ``key`` keeps the ids of two forms apart. */
function calendarInputs(key, calendar, editable) {
  const errors = new FieldErrors();
  const hours = calendar?.hours ?? {timezone: 'UTC', weekly: {}, holidays: []};
  const input = (part, id, attrs) => errors.place(part, h('input', {id: `${key}-${id}`,
    type: 'text', autocomplete: 'off', readonly: !editable, ...attrs}));
  const name = input('name', 'name', {value: calendar?.name ?? ''});
  const zone = input('hours.timezone', 'zone', {value: hours.timezone});
  const days = DAYS.map((day, i) => input(`hours.weekly.${i}`, `day-${i}`,
    {value: writeShifts(hours.weekly[String(i)])}));
  const holidays = errors.place('hours.holidays', h('textarea', {id: `${key}-holidays`,
    rows: 2, readonly: !editable}, (hours.holidays ?? []).join(', ')));
  const controls = [
    field(`${key}-name`, 'Name', name),
    field(`${key}-zone`, 'Time zone', zone, 'an IANA zone, such as Europe/Berlin'),
    h('table', {class: 'admin-table calendar-week'},
      h('caption', null, 'Shifts per weekday, such as 09:00-12:00, 13:00-17:00 '
        + '(empty: closed; a night shift is two, one ending at 24:00)'),
      h('tbody', null, DAYS.map((day, i) => h('tr', null,
        h('th', {scope: 'row'}, h('label', {for: days[i].id}, day)), h('td', null, days[i]))))),
    field(`${key}-holidays`, 'Holidays', holidays, 'dates YYYY-MM-DD, separated by commas'),
  ];
  function body() {
    const weekly = {};
    days.forEach((d, i) => {
      const shifts = parseShifts(d.value);
      if (shifts.length) weekly[String(i)] = shifts;
    });
    return {name: name.value.trim(), hours: {timezone: zone.value.trim(), weekly,
      holidays: holidays.value.split(/[,\s]+/).map((x) => x.trim()).filter(Boolean)}};
  }
  return {controls, body, errors};
}

function calendarForm(app, calendar, reload) {
  const editable = app.session.may('PATCH /v1/calendars/{calendar_id}');
  const key = `cal-${calendar.id.slice(0, 8)}`;
  const {controls, body, errors} = calendarInputs(key, calendar, editable);
  const saved = h('p', {class: 'saved', role: 'status'});
  const deleting = app.session.may('DELETE /v1/calendars/{calendar_id}')
    ? deleteForm(app, {
      record: calendar, kind: 'calendar', name: calendar.name,
      path: `/v1/calendars/${calendar.id}`, reload,
      help: 'Only a calendar no SLA policy runs on; clocks that ran on it keep being judged '
        + 'on its hours.'}) : null;
  return h('details', {class: 'admin-item', dataset: {id: calendar.id}},
    h('summary', null, calendar.name, ' ', h('span', {class: 'hint'},
      `${calendar.hours.timezone} · version ${calendar.version} · changed `
      + `${dateTime(calendar.updated_at)}`)),
    actionForm(`Calendar ${calendar.name}`, [...controls, saved,
      editable ? h('button', {type: 'submit', class: 'primary'}, 'Save the calendar') : null],
    async () => {
      const done = await app.api.patch(`/v1/calendars/${calendar.id}`, body(),
        {ifMatch: calendar.version, idempotencyKey: newIdempotencyKey()});
      fill(saved, `Saved: version ${done.body.version}.`);
      announce(`Calendar ${done.body.name} saved`);
      await reload(calendar.id);
    }, {errors, reread: () => reload(calendar.id)}), deleting);
}

export function calendarsPage(app, body) {
  const list = h('div', {class: 'admin-list'});
  /** Read the calendars and draw them, the one ``open`` (an id) opened. */
  async function load(open) {
    const calendars = await all(app.api, '/v1/calendars');
    fill(list, h('h2', null, 'Calendars'), calendars.length
      ? calendars.map((c) => calendarForm(app, c, load))
      : h('p', {class: 'help'}, 'No calendars yet: SLA policies without one count every '
        + 'hour of the day.'));
    const item = open ? list.querySelector(`[data-id="${open}"]`) : null;
    if (item) item.open = true;
  }
  const parts = [];
  if (app.session.may('POST /v1/calendars')) {
    const {controls, body: made, errors} = calendarInputs('cal-new', null, true);
    const form = actionForm('Create a calendar', [h('h2', null, 'Create a calendar'),
      ...controls, h('button', {type: 'submit', class: 'primary'}, 'Create the calendar')],
    async () => {
      const done = await app.api.post('/v1/calendars', made(),
        {idempotencyKey: newIdempotencyKey()});
      announce(`Calendar ${done.body.name} created`);
      form.reset();
      await load(done.body.id);
    }, {errors});
    parts.push(form);
  }
  fill(body, list, parts);
  return load();
}
