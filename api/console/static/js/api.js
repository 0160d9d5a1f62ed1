// The API client of the console: every call goes to this origin's /v1 with the
// session's credential, and every failure becomes an ApiError carrying the problem
// the API answered (title, detail, code), to be shown, never swallowed.

/** A failed API call: ``status`` (0: the API could not be reached) and ``problem``,
 * the RFC 9457 problem details (``title``, ``detail``, ``code``, maybe ``errors``). */
export class ApiError extends Error {
  constructor(status, problem, headers) {
    super(`${problem.title}: ${problem.detail ?? ''}`);
    this.status = status;
    this.problem = problem;
    this.headers = headers ?? new Headers();
  }

  get code() {
    return this.problem.code;
  }
}

let serverOffset = 0;

/** The server's idea of now, in milliseconds: SLA countdowns run on it, so a client
 * whose clock is off still counts down to the moment the server will check. */
export function now() {
  return Date.now() + serverOffset;
}

function learnServerTime(headers) {
  const date = Date.parse(headers.get('Date') ?? '');
  // A Date header has whole seconds: ignore differences it cannot tell apart.
  if (!Number.isNaN(date) && Math.abs(date - Date.now()) > 1500) serverOffset = date - Date.now();
}

/** A fresh Idempotency-Key (random, from the browser's CSPRNG: crypto.randomUUID needs
 * a secure context, which a console on a plain-HTTP address is not). */
export function newIdempotencyKey() {
  const bytes = crypto.getRandomValues(new Uint8Array(16));
  return `console-${[...bytes].map((b) => b.toString(16).padStart(2, '0')).join('')}`;
}

export function query(params) {
  const search = new URLSearchParams();
  for (const [name, value] of Object.entries(params ?? {})) {
    if (value === null || value === undefined || value === '') continue;
    search.set(name, Array.isArray(value) ? value.join(',') : String(value));
  }
  const text = search.toString();
  return text ? `?${text}` : '';
}

const sleep = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

export class Api {
  /** ``session`` gives the Authorization header and is told when a credential is
   * refused (api/console/static/js/session.js). */
  constructor(session) {
    this.session = session;
  }

  get(path, params, options) {
    return this.request('GET', path + query(params), options);
  }

  post(path, body, options) {
    return this.request('POST', path, {...options, body});
  }

  patch(path, body, options) {
    return this.request('PATCH', path, {...options, body});
  }

  put(path, body, options) {
    return this.request('PUT', path, {...options, body});
  }

  /** One call. ``ifMatch`` is a version (of a ticket, contact or organization; sent as
   * an ETag); ``idempotencyKey``
   * makes a repeated POST a replay of the first. Answers {status, body, etag}. */
  async request(method, path, {body, ifMatch, idempotencyKey, credential} = {}) {
    let refreshed = false;
    for (let attempt = 1; ; attempt += 1) {
      const headers = {Accept: 'application/json, application/problem+json'};
      const authorization = this.session.authorization(credential);
      if (authorization) headers.Authorization = authorization;
      if (body !== undefined) headers['Content-Type'] = 'application/json';
      if (ifMatch !== undefined && ifMatch !== null) headers['If-Match'] = `"${ifMatch}"`;
      if (idempotencyKey) headers['Idempotency-Key'] = idempotencyKey;
      let response;
      try {
        response = await fetch(path, {
          method, headers, body: body === undefined ? undefined : JSON.stringify(body),
          cache: 'no-store', credentials: 'same-origin', redirect: 'error',
        });
      } catch (error) {
        throw new ApiError(0, {
          title: 'The API could not be reached',
          detail: `${method} ${path} failed before an answer came back (${error.message}). ` +
            'Check the connection and try again.',
          code: 'network_error',
        });
      }
      learnServerTime(response.headers);
      const answer = await parse(response);
      if (response.ok) {
        return {status: response.status, body: answer, etag: etagVersion(response.headers),
                headers: response.headers};
      }
      const problem = asProblem(response, answer);
      // The same key still running elsewhere (a double click that got through): wait
      // as told and ask again; the answer is then the first request's, replayed.
      if (response.status === 409 && problem.code === 'idempotency_in_flight' && attempt < 5) {
        await sleep(1000 * Number(response.headers.get('Retry-After') ?? 1));
        continue;
      }
      if (response.status === 401 && !credential && !refreshed) {
        refreshed = true;
        if (await this.session.refresh()) continue;
        this.session.refused(new ApiError(401, problem, response.headers));
      }
      throw new ApiError(response.status, problem, response.headers);
    }
  }
}

async function parse(response) {
  const type = response.headers.get('Content-Type') ?? '';
  const text = await response.text();
  if (type.includes('json') && text) {
    try {
      return JSON.parse(text);
    } catch {
      return text;
    }
  }
  return text;
}

function asProblem(response, answer) {
  if (answer && typeof answer === 'object' && answer.title) return answer;
  return {
    title: response.statusText || `HTTP ${response.status}`,
    status: response.status,
    code: 'unexpected_answer',
    detail: typeof answer === 'string' && answer ? answer.slice(0, 500)
      : `The API answered ${response.status} without problem details.`,
  };
}

function etagVersion(headers) {
  const tag = headers.get('ETag');
  if (!tag) return null;
  const version = Number(tag.replace(/^W\//, '').replaceAll('"', ''));
  return Number.isInteger(version) ? version : null;
}
