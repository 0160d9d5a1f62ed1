// Who is signed in, with what credential, and what their role may do.
//
// The rest of the console asks the session for three things only: the Authorization
// header of an API call, the token of the live feed's first message, and whether the
// principal may run an operation ("GET /v1/tickets", from GET /v1/auth/me, which
// reads the authorization table the API enforces). How the credential was obtained
// stays here.
//
// Sign-in methods: today a person pastes an API key. Staff sign-in with e-mail and
// password slots in as another entry of SIGN_IN_METHODS, in front of the key:
//   fields tenant, email, password; obtain() POSTs them to /v1/auth/sign-in and
//   returns {kind: 'access_token', token, expiresAt} from its answer;
// and refresh() below renews such a token through POST /v1/auth/refresh (the refresh
// token travels in its httpOnly cookie, never through this code), and signOut() also
// POSTs /v1/auth/sign-out. Nothing else changes: an access token is a bearer token
// like a key, and /v1/auth/me answers for both.

const STORAGE_KEY = 'helpdesk.console.credential';

export const SIGN_IN_METHODS = [
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

  /** Whether the principal's role may run ``operation`` ("METHOD /path"). */
  may(operation) {
    return Boolean(this.principal?.operations.includes(operation));
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
    this.credential = credential;
    this.principal = me.body;
    this.notice = null;
    this.storage.setItem(STORAGE_KEY, JSON.stringify(credential));
    this.changed();
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
    try {
      const me = await api.get('/v1/auth/me', null, {credential});
      this.credential = credential;
      this.principal = me.body;
    } catch (error) {
      if (error.status === 401 || error.status === 403) this.storage.removeItem(STORAGE_KEY);
      this.notice = error;
      return false;
    }
    return true;
  }

  /** Renew an expiring credential; true when there is a new one to retry with. An API
   * key cannot be renewed (staff sign-in renews its access token here). */
  async refresh() {
    return false;
  }

  /** The API refused the credential (revoked key, deactivated agent): sign out and
   * keep the reason to show on the sign-in page. */
  refused(error) {
    this.notice = error;
    this.signOut();
  }

  signOut() {
    this.storage.removeItem(STORAGE_KEY);
    this.credential = null;
    this.principal = null;
    this.changed();
  }
}
