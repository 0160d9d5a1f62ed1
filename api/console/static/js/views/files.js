// Files on a ticket: the picker of a reply or note (a file input, and files dropped on
// the form), the files of a message with their name, size and type, thumbnails of the
// safe images (png, jpeg, gif, webp: the API serves only those inline), and the list
// of every file on the ticket. Files are fetched with the session's credential and
// shown through blob: URLs (the Content-Security-Policy allows images from nowhere
// else); nothing a file holds becomes markup.

import {newIdempotencyKey} from '../api.js';
import {h} from '../dom.js';
import {dateTime} from '../format.js';

const INLINE = new Set(['image/png', 'image/jpeg', 'image/gif', 'image/webp']);

/** A size as people read it. */
export function fileSize(bytes) {
  if (bytes < 1024) return `${bytes} B`;
  if (bytes < 1024 * 1024) return `${(bytes / 1024).toFixed(1)} KiB`;
  return `${(bytes / 1024 / 1024).toFixed(1)} MiB`;
}

async function fileCall(app, method, path, init = {}) {
  const headers = {...init.headers};
  const authorization = app.session.authorization();
  if (authorization) headers.Authorization = authorization;
  const response = await fetch(path, {method, ...init, headers, cache: 'no-store',
                                      credentials: 'same-origin', redirect: 'error'});
  if (!response.ok) {
    let problem = {title: response.statusText || `HTTP ${response.status}`,
                   detail: `${method} ${path} answered ${response.status}`};
    try {
      problem = await response.json();
    } catch {
      // not problem+json: the status says it
    }
    const error = new Error(problem.detail ?? problem.title);
    error.status = response.status;
    error.problem = problem;
    throw error;
  }
  return response;
}

/** The picker of a reply or note form: choose files, or drop them on ``dropTarget``.
 * ``upload()`` sends the chosen ones (each with an Idempotency-Key of its own, kept
 * until the message is sent, so a retry does not upload twice) and answers their
 * upload ids; ``clear()`` forgets them once the message went. */
export function filePicker(app, dropTarget) {
  const input = h('input', {type: 'file', id: 'reply-files', multiple: true,
                            class: 'file-input'});
  const chosen = h('ul', {class: 'chosen-files', 'aria-label': 'Files to attach'});
  let files = [];

  function draw() {
    chosen.replaceChildren(...files.map((f, i) => h('li', {class: 'chosen-file'},
      h('span', {class: 'file-name'}, f.file.name), ' ',
      h('span', {class: 'file-meta'}, `${fileSize(f.file.size)} · ${f.file.type || 'file'}`),
      ' ', h('button', {type: 'button', class: 'link', 'aria-label': `Remove ${f.file.name}`,
                        onclick: () => { files.splice(i, 1); draw(); }}, 'Remove'))));
  }

  function add(list) {
    for (const file of list) files.push({file, key: newIdempotencyKey(), id: null});
    draw();
  }

  input.addEventListener('change', () => { add(input.files); input.value = ''; });
  dropTarget.addEventListener('dragover', (e) => {
    if (!e.dataTransfer?.types.includes('Files')) return;
    e.preventDefault();
    dropTarget.classList.add('dropping');
  });
  dropTarget.addEventListener('dragleave', () => dropTarget.classList.remove('dropping'));
  dropTarget.addEventListener('drop', (e) => {
    dropTarget.classList.remove('dropping');
    if (!e.dataTransfer?.files.length) return;
    e.preventDefault();
    add(e.dataTransfer.files);
  });

  return {
    element: h('div', {class: 'file-picker'},
      h('label', {for: 'reply-files'}, 'Attach files (or drop them here)'), input, chosen),
    async upload() {
      for (const f of files) {
        if (f.id) continue;
        const path = `/v1/uploads?name=${encodeURIComponent(f.file.name)}`;
        const answer = await fileCall(app, 'POST', path, {
          body: f.file, headers: {'Content-Type': f.file.type || 'application/octet-stream',
                                  'Idempotency-Key': f.key}});
        f.id = (await answer.json()).id;
      }
      return files.map((f) => f.id);
    },
    clear() {
      files = [];
      draw();
    },
  };
}

async function blobUrl(app, attachment, disposition) {
  const query = disposition === 'inline' ? '?disposition=inline' : '';
  const response = await fileCall(app, 'GET', `/v1/attachments/${attachment.id}${query}`);
  return URL.createObjectURL(await response.blob());
}

/** A message's files: name, size and type, a download button, and a thumbnail for a
 * safe image. */
export function attachmentList(app, attachments) {
  if (!attachments?.length) return null;
  return h('ul', {class: 'attachments', 'aria-label': 'Attached files'},
    attachments.map((a) => attachmentItem(app, a)));
}

function attachmentItem(app, a) {
  const thumb = INLINE.has(a.type) && a.name
    ? h('img', {class: 'thumbnail', alt: `Preview of ${a.name}`, width: 96}) : null;
  if (thumb) {
    blobUrl(app, a, 'inline').then((url) => { thumb.src = url; }).catch(() => thumb.remove());
  }
  const download = h('button', {type: 'button', class: 'link',
                                'aria-label': `Download ${a.name || 'the file'}`}, 'Download');
  download.addEventListener('click', async () => {
    try {
      const url = await blobUrl(app, a, 'attachment');
      const link = h('a', {href: url, download: a.name || 'file'});
      link.click();
      setTimeout(() => URL.revokeObjectURL(url), 60_000);
    } catch (error) {
      download.replaceWith(h('span', {class: 'problem-inline', role: 'alert'},
        `Not available (${error.status ?? ''} ${error.problem?.code ?? error.message})`));
    }
  });
  return h('li', {class: 'attachment', dataset: {id: a.id}},
    thumb,
    h('span', {class: 'file-name'}, a.name || '(name erased)'), ' ',
    h('span', {class: 'file-meta'}, `${fileSize(a.size)} · ${a.type}`), ' ', download);
}

/** Every file on the ticket, from its messages, oldest first. */
export function ticketFiles(app, messages) {
  const rows = messages.flatMap((m) => (m.attachments ?? []).map((a) => ({a, m})));
  if (!rows.length) return h('p', {class: 'help'}, 'No files.');
  return h('table', {class: 'files-table'},
    h('thead', null, h('tr', null, h('th', null, 'Name'), h('th', null, 'Size'),
                       h('th', null, 'Type'), h('th', null, 'Added'))),
    h('tbody', null, rows.map(({a, m}) => h('tr', {dataset: {id: a.id}},
      h('td', null, a.name || '(name erased)'), h('td', null, fileSize(a.size)),
      h('td', null, a.type),
      h('td', null, h('time', {datetime: m.created_at}, dateTime(m.created_at)),
        m.visibility === 'internal' ? ' (internal)' : '')))));
}
