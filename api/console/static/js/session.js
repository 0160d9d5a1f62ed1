// Who is signed in, with what credential, and what their role may do.
//
// The rest of the console asks the session for three things only: the Authorization
// header of an API call, the token of the live feed's first message, and whether the
// principal may run an operation ("GET /v1/tickets", from GET /v1/auth/me, which
// reads the authorization table the API enforces). How the credential was obtained
// stays here.
//
// Sign-in methods (SIGN_IN_METHODS), one form each on the sign-in page:
// - e-mail and password: obtain() POSTs tenant, email and password to
//   /v1/auth/sign-in and keeps {kind: 'access_token', token, expiresAt} from its
//   answer. The refresh token travels only in its httpOnly cookie (path /v1/auth),
//   never through this code: refresh() renews the access token through
//   POST /v1/auth/refresh a minute before it expires (and once on a 401), and
//   signOut() POSTs /v1/auth/sign-out, which ends the session on the server.
// - a "Sign in with ..." button when the tenant has an OpenID Connect provider
//   (GET /v1/auth/oidc/{tenant}): the browser goes to the provider and comes back
//   through the server's callback, which sets the same refresh cookie and lands here
//   with ?signed_in=oidc; adoptRedirect() spends the cookie for the access token.
// - an API key pasted into the page, for programs' owners: it cannot be renewed.
// An access token is a bearer token like a key, and /v1/auth/me answers for both.
//
// A refresh token is spent by its use, and presenting a spent one ends the session
// (the API takes it for a stolen copy), so this tab never runs two refreshes at once:
// every caller shares the one in flight.

const STORAGE_KEY = 'helpdesk.console.credential';

// Renew this long before the access token expires, so no call meets an expired one.
const RENEW_EARLY_MS = 60_000;

function accessToken(answer) {
  return {kind: 'access_token', token: answer.access_token,
          expiresAt: Date.now() + answer.expires_in * 1000};
}

/** A tenant's slug, or its id. */
const TENANT = '[A-Za-z0-9][A-Za-z0-9\\-]{0,62}';
const TENANT_KEY = 'helpdesk.tenant';

/** The tenant to sign in to: a ``?tenant=`` link's, else the one this browser signed in
 * to last (local storage: it is no secret, and it outlives the tab). */
export function rememberedTenant() {
  const linked = new URLSearchParams(window.location.search).get('tenant');
  if (linked) return linked;
  try {
    return window.localStorage.getItem(TENANT_KEY) ?? '';
  } catch {
    return '';
  }
}

function rememberTenant(tenant) {
  try {
    window.localStorage.setItem(TENANT_KEY, tenant);
  } catch {
    // Storage refused (a private window): the field is simply empty next time.
  }
}

export const SIGN_IN_METHODS = [
  {
    id: 'password',
    title: 'Sign in with your e-mail and password',
    help: 'The tenant is your helpdesk\u2019s short name (such as harbor-bikes), from your ' +
      'admin with your invitation (the demo prints it at start-up); this browser remembers ' +
      'it. You stay signed in while the console is in use; signing out ends the session ' +
      'on the server.',
    fields: [
      {name: 'tenant', label: 'Tenant', type: 'text', autocomplete: 'organization',
       pattern: TENANT, spellcheck: 'false', remembered: TENANT_KEY},
      {name: 'email', label: 'E-mail', type: 'email', autocomplete: 'username',
       spellcheck: 'false'},
      {name: 'password', label: 'Password', type: 'password',
       autocomplete: 'current-password'},
    ],
    submit: 'Sign in',
    async obtain(values, api) {
      const tenant = values.tenant.trim();
      const answer = await api.post('/v1/auth/sign-in', {
        tenant, email: values.email.trim(), password: values.password,
      }, {credential: {kind: 'none'}});
      rememberTenant(tenant);
      return accessToken(answer.body);
    },
  },
  {
    id: 'api-key',
    title: 'Sign in with an API key',
    help: 'Paste an API key (it starts with hd_). It is kept in this browser tab only ' +
      '(session storage) and sent nowhere but this server\u2019s API.',
    fields: [
      {name: 'secret', label: 'API key', type: 'password', autocomplete: 'off',
       pattern: 'hd_[A-Za-z0-9_\\-]{20,}', spellcheck: 'false'},
    ],
    submit: 'Sign in',
    async obtain(values) {
      return {kind: 'api_key', secret: values.secret.trim()};
    },
  },
];

function tokenOf(credential) {
  return credential?.kind === 'api_key' ? credential.secret : credential?.token;
}

export class Session {
  constructor(storage = window.sessionStorage) {
    this.storage = storage;
    this.credential = null;
    this.principal = null;
    this.listeners = new Set();
    this.notice = null;
    this.refreshing = null;
    this.renewal = null;
  }

  get signedIn() {
    return this.principal !== null;
  }

  /** ``Authorization`` for an API call (``credential``: one being tried at sign-in). */
  authorization(credential) {
    const token = tokenOf(credential ?? this.credential);
    return token ? `Bearer ${token}` : '';
  }

  /** The token the live feed's ``{"op": "auth"}`` message carries. */
  feedToken() {
    return tokenOf(this.credential);
  }

  /** Whether the principal's permissions (its role's, narrowed to a scoped key's
   * scopes) let it run ``operation`` ("METHOD /path"): ``GET /v1/auth/me`` lists the
   * operations they allow, from the table the API enforces. */
  may(operation) {
    return Boolean(this.principal?.operations.includes(operation));
  }

  /** Whether the principal holds ``permission`` (such as "ticket:reply"). */
  holds(permission) {
    return Boolean(this.principal?.permissions?.includes(permission));
  }

  /** Whether the credential is an API key issued with scopes. */
  get scoped() {
    return Array.isArray(this.principal?.credential?.scopes);
  }

  /** Who the console shows as signed in: the person, else the key's name. */
  displayName() {
    const p = this.principal;
    return p?.agent?.name ?? p?.credential?.name ?? 'API key';
  }

  onChange(listener) {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  changed() {
    for (const listener of this.listeners) listener(this);
  }

  /** Sign in with what a method's form collected: the credential must answer
   * GET /v1/auth/me before it is kept. Throws the API's error otherwise. */
  async signIn(method, values, api) {
    const credential = await method.obtain(values, api);
    const me = await api.get('/v1/auth/me', null, {credential});
    this.keep(credential);
    this.principal = me.body;
    this.notice = null;
    this.changed();
  }

  /** Hold ``credential`` (and this tab's copy of it); plan the renewal of a token. */
  keep(credential) {
    this.credential = credential;
    this.storage.setItem(STORAGE_KEY, JSON.stringify(credential));
    clearTimeout(this.renewal);
    if (credential.kind === 'access_token') {
      const wait = Math.max(0, credential.expiresAt - Date.now() - RENEW_EARLY_MS);
      this.renewal = setTimeout(() => { this.refresh(); }, wait);
    }
  }

  /** Back from an OpenID Connect sign-in (?signed_in=oidc): the refresh cookie is set,
   * so a refresh answers the access token. Tidies the address bar either way. */
  async adoptRedirect(api) {
    const params = new URLSearchParams(window.location.search);
    if (params.get('signed_in') !== 'oidc') return false;
    params.delete('signed_in');
    params.delete('tenant');
    const rest = params.toString();
    window.history.replaceState(null, '', window.location.pathname +
      (rest ? `?${rest}` : '') + window.location.hash);
    this.credential = {kind: 'access_token', token: '', expiresAt: 0};
    if (!await this.renew()) {
      this.credential = null;
      return false;
    }
    const me = await api.get('/v1/auth/me', null, {credential: this.credential});
    this.principal = me.body;
    return true;
  }

  /** Sign in again with the credential this tab kept, if any. */
  async restore(api) {
    const kept = this.storage.getItem(STORAGE_KEY);
    if (!kept) return false;
    let credential;
    try {
      credential = JSON.parse(kept);
    } catch {
      this.storage.removeItem(STORAGE_KEY);
      return false;
    }
    this.keep(credential);
    for (let attempt = 1; ; attempt += 1) {
      try {
        const me = await api.get('/v1/auth/me', null, {credential: this.credential});
        this.principal = me.body;
        return true;
      } catch (error) {
        // A page reloaded after its access token expired: the cookie renews it.
        if (error.status === 401 && attempt === 1 && await this.refresh()) continue;
        if (error.status === 401 || error.status === 403) this.storage.removeItem(STORAGE_KEY);
        this.credential = null;
        this.notice = error;
        return false;
      }
    }
  }

  /** Renew the access token through the refresh cookie; true when there is a new one
   * to retry with. Callers share the renewal in flight (see the top of this file). An
   * API key cannot be renewed. */
  refresh() {
    if (this.credential?.kind !== 'access_token') return Promise.resolve(false);
    this.refreshing ??= this.renew().finally(() => { this.refreshing = null; });
    return this.refreshing;
  }

  async renew() {
    let response;
    try {
      response = await fetch('/v1/auth/refresh', {
        method: 'POST', credentials: 'same-origin', cache: 'no-store', redirect: 'error',
        headers: {Accept: 'application/json, application/problem+json'},
      });
    } catch {
      return false;
    }
    if (!response.ok) return false;
    this.keep(accessToken(await response.json()));
    return true;
  }

  /** The API refused the credential (revoked key, deactivated agent): sign out and
   * keep the reason to show on the sign-in page. */
  refused(error) {
    this.notice = error;
    this.signOut();
  }

  /** Forget the credential here; a signed-in person's session also ends on the server
   * (its refresh cookie is revoked and cleared, and its access tokens stop). */
  signOut() {
    if (this.credential?.kind === 'access_token') {
      fetch('/v1/auth/sign-out', {method: 'POST', credentials: 'same-origin',
                                  cache: 'no-store', redirect: 'error'}).catch(() => {});
    }
    clearTimeout(this.renewal);
    this.storage.removeItem(STORAGE_KEY);
    this.credential = null;
    this.principal = null;
    this.changed();
  }
}
