// The contact's portal session: the portal token in sessionStorage (this tab only),
// renewed through the httpOnly refresh cookie that page scripts never see (it is
// scoped to /v1/portal/auth and sent by the browser to refresh and sign-out only).
// The console's API client (/console/js/api.js) asks it for the Authorization header
// and to refresh once on a 401.

export class PortalSession {
  constructor(tenant, onEnded) {
    this.tenant = tenant;
    this.key = `portal:${tenant}`;
    this.onEnded = onEnded;
    this.inFlight = null;
    try {
      this.held = JSON.parse(sessionStorage.getItem(this.key) ?? 'null');
    } catch {
      this.held = null;
    }
  }

  get signedIn() {
    return Boolean(this.held?.token);
  }

  get token() {
    return this.held?.token ?? null;
  }

  keep(answer) {
    this.held = {token: answer.access_token, expiresAt: answer.expires_at,
                 contactId: answer.contact_id, tenantId: answer.tenant_id};
    sessionStorage.setItem(this.key, JSON.stringify(this.held));
  }

  forget() {
    this.held = null;
    sessionStorage.removeItem(this.key);
  }

  /** ``credential`` 'none': a call that carries no token (sign-in, the password link,
   * the brand), whose 401 is an answer to show rather than a token to renew. */
  authorization(credential) {
    if (credential === 'none') return null;
    if (credential) return `Bearer ${credential}`;
    return this.held?.token ? `Bearer ${this.held.token}` : null;
  }

  /** A new portal token through the cookie; one refresh in flight per tab, since a
   * refresh token spent twice ends the session. Answers whether it worked. */
  refresh() {
    if (!this.inFlight) {
      this.inFlight = (async () => {
        try {
          const response = await fetch('/v1/portal/auth/refresh', {
            method: 'POST', credentials: 'same-origin', cache: 'no-store'});
          if (!response.ok) return false;
          this.keep(await response.json());
          return true;
        } catch {
          return false;
        } finally {
          setTimeout(() => { this.inFlight = null; }, 0);
        }
      })();
    }
    return this.inFlight;
  }

  refused(error) {
    this.forget();
    this.onEnded(error);
  }

  async signOut() {
    const token = this.held?.token;
    this.forget();
    await fetch('/v1/portal/auth/sign-out', {
      method: 'POST', credentials: 'same-origin', cache: 'no-store',
      headers: token ? {Authorization: `Bearer ${token}`} : {}});
  }
}
