// Drafts: what an agent wrote on a ticket and has not sent, kept in this browser
// (local storage, per tenant and ticket) until it is sent, so leaving the page, a
// reload or a closed tab loses nothing. A draft is the agent's own: it never leaves
// the browser.

const PREFIX = 'helpdesk.draft.';

export class Drafts {
  constructor(session, storage = window.localStorage) {
    this.session = session;
    this.storage = storage;
  }

  key(ticketId) {
    const p = this.session.principal;
    return `${PREFIX}${p?.tenant.id}.${p?.agent?.id ?? p?.credential.id}.${ticketId}`;
  }

  /** The draft of a ticket ({visibility, body}), or null. */
  load(ticketId) {
    try {
      const kept = this.storage.getItem(this.key(ticketId));
      return kept ? JSON.parse(kept) : null;
    } catch {
      return null;
    }
  }

  /** Keep a draft; an empty one (or null: sent) is forgotten. */
  save(ticketId, draft) {
    try {
      if (!draft || !draft.body.trim()) this.storage.removeItem(this.key(ticketId));
      else this.storage.setItem(this.key(ticketId), JSON.stringify(draft));
    } catch {
      // Storage refused (full, or a private window): the draft lives as long as the page.
    }
  }
}
