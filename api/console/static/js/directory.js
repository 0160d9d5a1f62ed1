// Names for ids: the tenant's agents (to show who wrote, who is assigned, whom to
// assign) and, for admins, its API keys (to name the key an event was stamped with).
// Read once per sign-in, when the role may; a role that may not sees short ids.

import {shortId} from './format.js';

const PAGES = 20;

async function all(api, path) {
  const rows = [];
  let cursor = null;
  for (let page = 0; page < PAGES; page += 1) {
    const answer = await api.get(path, {limit: 100, cursor});
    rows.push(...answer.body.data);
    cursor = answer.body.next_cursor;
    if (!cursor) break;
  }
  return rows;
}

export class Directory {
  constructor(api, session) {
    this.api = api;
    this.session = session;
    this.agents = new Map();
    this.keys = new Map();
    this.loaded = null;
  }

  /** Load what the role may read; an error is the caller's to show. */
  load(force = false) {
    if (!this.loaded || force) {
      this.loaded = (async () => {
        if (this.session.may('GET /v1/agents')) {
          const agents = await all(this.api, '/v1/agents');
          this.agents = new Map(agents.map((a) => [a.id, a]));
        }
        if (this.session.may('GET /v1/api-keys')) {
          const keys = await all(this.api, '/v1/api-keys');
          this.keys = new Map(keys.map((k) => [k.id, k]));
        }
      })();
      this.loaded.catch(() => { this.loaded = null; });
    }
    return this.loaded;
  }

  reset() {
    this.agents = new Map();
    this.keys = new Map();
    this.loaded = null;
  }

  /** Active agents, by name: the choices for an assignee. */
  activeAgents() {
    return [...this.agents.values()].filter((a) => a.active)
      .sort((a, b) => a.name.localeCompare(b.name));
  }

  agentName(id) {
    if (!id) return null;
    return this.agents.get(id)?.name ?? `agent ${shortId(id)}`;
  }

  /** The author of a message or event: an agent's name, the customer's address, or
   * the system. */
  author(author) {
    if (!author) return '';
    if (author.kind === 'agent') return this.agentName(author.id);
    if (author.kind === 'customer') return author.id;
    return author.kind === 'system' ? 'System' : `${author.kind} ${author.id}`;
  }

  /** The actor the database stamped on an event (an API key, a signed-in person, the
   * scheduler, the operator), named as far as this role can tell. */
  actor(actor) {
    if (actor.kind === 'api_key') {
      const key = this.keys.get(actor.id);
      if (!key) return `API key ${shortId(actor.id)}`;
      // A person's key is the person; a key of no person is named as a key.
      return key.agent_id ? this.agentName(key.agent_id) : `key \u201c${key.name}\u201d`;
    }
    // A person signed in with a password: the database stamped their agent id.
    if (actor.kind === 'agent') return this.agentName(actor.id);
    if (actor.kind === 'system') return `system (${actor.id})`;
    return `${actor.kind} ${actor.id}`;
  }
}
