// Admin: the tenant's mailboxes (/v1/mailboxes, docs/email.md): an address, inbound
// IMAP, outbound SMTP and DKIM signing. Each mailbox is a form of its own, saved with
// If-Match on the version shown; passwords and the DKIM key are write-only: each says
// whether one is stored (the API's password_set, private_key_set), left empty the
// stored one is kept, and "Forget the stored password" sends it as null. The inbound
// secret is shown once, when the mailbox is made. "Test connection" asks the API to
// log in to each server (POST /v1/mailboxes/{id}/test) and shows how each answered;
// "Delete" is DELETE with If-Match, refused for a mailbox that took in or sent mail. A
// refusal's messages stand next to the inputs they name. Each mailbox's quarantine
// (mail that could not be taken in) is listed when the mailbox is opened, a page at a
// time, each mail with a "Retry" and a "Discard" button.

import {newIdempotencyKey} from '../api.js';
import {announce, busy, clearProblem, fill, h, showProblem} from '../dom.js';
import {dateTime} from '../format.js';
import {FieldErrors, actionForm, all, deleteForm, field} from './forms.js';
import {quarantinePanel} from './quarantine.js';

const SECURITY = [['none', 'None (plain)'], ['starttls', 'STARTTLS'], ['tls', 'TLS']];
const TRIAL = {ok: 'ok', failed: 'failed', not_configured: 'not configured'};

/** A port as typed: a number when it is one, else the text, for the API to refuse
 * where it stands. */
function port(text) {
  const value = text.trim();
  return /^\d+$/.test(value) ? Number(value) : value;
}

/** The inputs of a mailbox (``box`` null: a new one), the body they make, and where
 * each part of a refusal goes. ``key`` keeps the ids of two forms apart. */
function mailboxInputs(key, box) {
  const errors = new FieldErrors();
  const input = (part, id, attrs) => errors.place(part, h('input', {id: `${key}-${id}`,
    type: 'text', autocomplete: 'off', ...attrs}));
  const select = (part, id, chosen) => errors.place(part, h('select', {id: `${key}-${id}`},
    SECURITY.map(([value, text]) => h('option', {value, selected: value === chosen}, text))));
  const secret = (part, id, held) => input(part, id, {type: 'password',
    autocomplete: 'new-password', placeholder: held ? 'unchanged' : ''});
  const address = input('address', 'address', {value: box?.address ?? '', readonly: !!box,
    type: 'email'});
  const name = input('name', 'name', {value: box?.name ?? ''});
  const imap = box?.imap;
  const smtp = box?.smtp;
  const dkim = box?.dkim;
  const i = {host: input('imap.host', 'imap-host', {value: imap?.host ?? ''}),
    port: input('imap.port', 'imap-port', {value: imap?.port ?? 993, inputmode: 'numeric'}),
    security: select('imap.security', 'imap-security', imap?.security ?? 'tls'),
    username: input('imap.username', 'imap-user', {value: imap?.username ?? ''}),
    password: secret('imap.password', 'imap-password', imap?.password_set),
    forget: h('input', {id: `${key}-imap-forget`, type: 'checkbox'}),
    folder: input('imap.folder', 'imap-folder', {value: imap?.folder ?? 'INBOX'})};
  const s = {host: input('smtp.host', 'smtp-host', {value: smtp?.host ?? ''}),
    port: input('smtp.port', 'smtp-port', {value: smtp?.port ?? 587, inputmode: 'numeric'}),
    security: select('smtp.security', 'smtp-security', smtp?.security ?? 'starttls'),
    username: input('smtp.username', 'smtp-user', {value: smtp?.username ?? ''}),
    password: secret('smtp.password', 'smtp-password', smtp?.password_set),
    forget: h('input', {id: `${key}-smtp-forget`, type: 'checkbox'})};
  const d = {selector: input('dkim.selector', 'dkim-selector', {value: dkim?.selector ?? ''}),
    domain: input('dkim.domain', 'dkim-domain', {value: dkim?.domain ?? ''}),
    key: errors.place('dkim.private_key', h('textarea', {id: `${key}-dkim-key`, rows: 3,
      placeholder: dkim?.private_key_set ? 'stored (unchanged)'
        : '-----BEGIN PRIVATE KEY-----'}))};
  /** What a write-only input's hint says: whether a secret is stored (a mailbox
   * shown) or that it will not be shown again (a new one). */
  const held = (server) => {
    if (!box) return 'write-only: never shown again';
    return server?.password_set ? 'stored: leave empty to keep it' : 'not set';
  };
  /** "Forget the stored password", offered only where one is stored. */
  const forgetting = (server, el, text) => (server?.password_set
    ? h('label', {class: 'check'}, el, text) : null);
  const controls = [
    field(`${key}-address`, 'Address', address, box ? 'an address cannot be changed'
      : 'such as support@example.com, without a +'),
    field(`${key}-name`, 'Name', name, 'the name mail goes out under'),
    h('fieldset', null, h('legend', null, 'Inbound: IMAP (empty host: not polled)'),
      field(`${key}-imap-host`, 'IMAP host', i.host),
      field(`${key}-imap-port`, 'IMAP port', i.port),
      field(`${key}-imap-security`, 'IMAP security', i.security),
      field(`${key}-imap-user`, 'IMAP username', i.username),
      field(`${key}-imap-password`, 'IMAP password', i.password, held(imap)),
      forgetting(imap, i.forget, 'Forget the stored IMAP password'),
      field(`${key}-imap-folder`, 'IMAP folder', i.folder)),
    h('fieldset', null, h('legend', null, 'Outbound: SMTP (empty host: no mail sent)'),
      field(`${key}-smtp-host`, 'SMTP host', s.host),
      field(`${key}-smtp-port`, 'SMTP port', s.port),
      field(`${key}-smtp-security`, 'SMTP security', s.security),
      field(`${key}-smtp-user`, 'SMTP username', s.username, 'empty: no login'),
      field(`${key}-smtp-password`, 'SMTP password', s.password, held(smtp)),
      forgetting(smtp, s.forget, 'Forget the stored SMTP password')),
    h('fieldset', null, h('legend', null, 'DKIM signing (empty selector: unsigned)'),
      field(`${key}-dkim-selector`, 'DKIM selector', d.selector),
      field(`${key}-dkim-domain`, 'DKIM domain', d.domain),
      field(`${key}-dkim-key`, 'DKIM private key', d.key, dkim
        ? `${dkim.private_key_set ? 'stored: leave empty to keep it' : 'not set'}; `
          + `publish at ${dkim.dns_name}: ${dkim.dns_record}`
        : 'an unencrypted PEM RSA key, 2048 bits advised')),
  ];
  /** The body: a part whose host (selector) is empty is left out of a new mailbox and
   * cleared (null) from one that had it; an empty secret is left out (kept), or null
   * (forgotten) when its "Forget" box is ticked. */
  function body() {
    const doc = box ? {} : {address: address.value.trim()};
    if (name.value.trim() || box) doc.name = name.value.trim() || null;
    const secretOf = (el, forget) => {
      if (el.value) return {password: el.value};
      return forget.checked ? {password: null} : {};
    };
    if (i.host.value.trim()) {
      doc.imap = {host: i.host.value.trim(), port: port(i.port.value),
        security: i.security.value, username: i.username.value.trim(),
        folder: i.folder.value.trim() || 'INBOX', ...secretOf(i.password, i.forget)};
    } else if (imap) doc.imap = null;
    if (s.host.value.trim()) {
      doc.smtp = {host: s.host.value.trim(), port: port(s.port.value),
        security: s.security.value, username: s.username.value.trim() || null,
        ...secretOf(s.password, s.forget)};
    } else if (smtp) doc.smtp = null;
    if (d.selector.value.trim()) {
      doc.dkim = {selector: d.selector.value.trim(), domain: d.domain.value.trim(),
        ...(d.key.value.trim() ? {private_key: d.key.value} : {})};
    } else if (dkim) doc.dkim = null;
    if (box && doc.name === null) delete doc.name; // a name is taken away by no PATCH
    return doc;
  }
  return {controls, body, errors};
}

/** "Test connection": each server's answer, ok or failed with its reason. */
function trialPanel(app, box) {
  const result = h('ul', {class: 'mail-trial', 'aria-label': 'Connection test', role: 'status'});
  const problems = h('div', {class: 'problems', hidden: true});
  const button = h('button', {type: 'button'}, 'Test connection');
  const panel = h('div', {class: 'mail-trial-panel'}, button, result, problems);
  button.addEventListener('click', () => busy(panel, async () => {
    clearProblem(problems);
    fill(result, h('li', null, 'Trying the servers\u2026'));
    try {
      const said = (await app.api.post(`/v1/mailboxes/${box.id}/test`, undefined,
        {idempotencyKey: newIdempotencyKey()})).body;
      fill(result, [['imap', 'IMAP'], ['smtp', 'SMTP']].map(([part, text]) => h('li',
        {dataset: {server: part, status: said[part].status}},
        h('strong', null, `${text}: `), h('span', {class: `badge trial-${said[part].status}`},
          TRIAL[said[part].status]), said[part].reason ? ` \u2014 ${said[part].reason}` : '')));
      announce(`Connection test: SMTP ${TRIAL[said.smtp.status]}, IMAP ${
        TRIAL[said.imap.status]}`);
    } catch (error) {
      fill(result);
      showProblem(problems, error, 'The connection test could not be run');
    }
  }));
  return panel;
}

function mailboxForm(app, box, reload) {
  const editable = app.session.may('PATCH /v1/mailboxes/{mailbox_id}');
  const key = `mbx-${box.id.slice(0, 8)}`;
  const {controls, body, errors} = mailboxInputs(key, box);
  const saved = h('p', {class: 'saved', role: 'status'});
  const deleting = app.session.may('DELETE /v1/mailboxes/{mailbox_id}')
    ? deleteForm(app, {
      record: box, kind: 'mailbox', name: box.address, path: `/v1/mailboxes/${box.id}`,
      reload, help: 'Only a mailbox that never took in or sent mail; to stop one that did, '
        + 'empty its IMAP and SMTP hosts.'}) : null;
  const state = box.status === 'ok' ? 'ok' : `degraded: ${box.last_error ?? ''}`;
  const quarantine = app.session.may('GET /v1/mailboxes/{mailbox_id}/quarantine')
    ? quarantinePanel(app, box) : null;
  const item = h('details', {class: 'admin-item', dataset: {id: box.id}},
    h('summary', null, box.address, ' ', h('span', {class: 'hint'},
      `${box.name ?? ''} · ${state} · version ${box.version} · changed `
      + `${dateTime(box.updated_at)}`)),
    app.session.may('POST /v1/mailboxes/{mailbox_id}/test') ? trialPanel(app, box) : null,
    actionForm(`Mailbox ${box.address}`, [...controls, saved,
      editable ? h('button', {type: 'submit', class: 'primary'}, 'Save the mailbox') : null],
    async () => {
      const done = await app.api.patch(`/v1/mailboxes/${box.id}`, body(),
        {ifMatch: box.version, idempotencyKey: newIdempotencyKey()});
      fill(saved, `Saved: version ${done.body.version}.`);
      announce(`Mailbox ${done.body.address} saved`);
      await reload(box.id);
    }, {errors, reread: () => reload(box.id)}), quarantine?.section, deleting);
  // The quarantine is read when the mailbox is first opened, not for every mailbox.
  item.addEventListener('toggle', () => { if (item.open) quarantine?.show(); });
  return item;
}

export function mailboxesPage(app, body) {
  const list = h('div', {class: 'admin-list'});
  const issued = h('div', {class: 'issued', role: 'status'});
  /** Read the mailboxes and draw them, the one ``open`` (an id) opened. */
  async function load(open) {
    const boxes = await all(app.api, '/v1/mailboxes');
    fill(list, h('h2', null, 'Mailboxes'), boxes.length
      ? boxes.map((b) => mailboxForm(app, b, load))
      : h('p', {class: 'help'}, 'No mailboxes yet: mail neither comes in nor goes out.'));
    const item = open ? list.querySelector(`[data-id="${open}"]`) : null;
    if (item) item.open = true;
  }
  const parts = [];
  if (app.session.may('POST /v1/mailboxes')) {
    const {controls, body: made, errors} = mailboxInputs('mbx-new', null);
    const form = actionForm('Add a mailbox', [h('h2', null, 'Add a mailbox'),
      ...controls, h('button', {type: 'submit', class: 'primary'}, 'Add the mailbox')],
    async () => {
      const done = (await app.api.post('/v1/mailboxes', made(),
        {idempotencyKey: newIdempotencyKey()})).body;
      fill(issued, h('p', null, `Mailbox ${done.address} added. Its inbound secret, shown `
        + 'this once (the bearer credential of its inbound address):'),
      h('code', {class: 'secret', 'aria-label': 'Inbound secret'}, done.inbound_secret),
      h('p', null, 'Inbound address: ', h('code', {class: 'inbound-url'}, done.inbound_url)));
      announce(`Mailbox ${done.address} added`);
      form.reset();
      await load(done.id);
    }, {errors});
    parts.push(form);
  }
  fill(body, issued, list, parts);
  return load();
}
