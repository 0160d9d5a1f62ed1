// Names for ids: the tenant's agents (to show who wrote, who is assigned, whom to
// assign), its groups and organizations (to filter and group by, to name a ticket's
// group), its ticket fields (their titles, types and options) and, for admins, its API
// keys (to name the key an event was stamped with) and SLA policies (to name the policy
// behind a ticket's clock). Read once per sign-in, when the
// role may; a role that may not sees short ids.

import {shortId} from './format.js';

const PAGES = 20;
/** The directory's maps by id, each read whole from its list, in this order. */
const MAPS = [['agents', '/v1/agents'], ['keys', '/v1/api-keys'], ['groups', '/v1/groups'],
  ['organizations', '/v1/organizations'], ['policies', '/v1/sla-policies']];

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
    this.reset();
    this.generation = 0; // counts the loads done: views redraw what names once it moves
  }

  /** Load what the role may read; an error is the caller's to show. */
  load(force = false) {
    if (!this.loaded || force) {
      this.loaded = (async () => {
        // Everything is read first and put in place at once: a view drawn while the
        // load is under way sees the last whole directory, never half of the next one
        // (it would be drawn again when the load ends, losing what someone chose).
        const next = {};
        for (const [name, path] of MAPS) {
          if (this.session.may(`GET ${path}`)) {
            next[name] = new Map((await all(this.api, path)).map((row) => [row.id, row]));
          }
        }
        if (this.session.may('GET /v1/ticket-fields')) {
          // One answer, no pages: a tenant has a bounded number of fields.
          next.fields = (await this.api.get('/v1/ticket-fields')).body.data;
        }
        Object.assign(this, next);
        this.generation += 1;
      })();
      this.loaded.catch(() => { this.loaded = null; });
    }
    return this.loaded;
  }

  reset() {
    this.agents = new Map();
    this.keys = new Map();
    this.groups = new Map();
    this.organizations = new Map();
    this.fields = [];
    this.policies = new Map();
    this.contacts = new Map();
    this.loaded = null;
  }

  /** Contacts are many: the console names those it has shown (a contact's page, a
   * ticket's requester), and short ids for the rest. */
  rememberContact(contact) {
    this.contacts.set(contact.id, contact);
  }

  contactLabel(id) {
    if (id === 'none') return 'No contact';
    const c = this.contacts.get(id);
    if (!c) return `contact ${shortId(id)}`;
    return c.name ? `${c.name} <${c.email}>` : c.email;
  }

  /** The agent the signed-in person (or key) acts as, or null. */
  myId() {
    return this.session.principal?.agent?.id ?? null;
  }

  /** Whether the signed-in agent is a member of the group ``id``. */
  inMyGroup(id) {
    const me = this.myId();
    return Boolean(me && id && this.groups.get(id)?.members.includes(me));
  }

  /** Groups by name: the choices for a ticket's group and the queue's filter. */
  groupList() {
    return [...this.groups.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  groupName(id) {
    if (!id || id === 'none') return 'No group';
    return this.groups.get(id)?.name ?? `group ${shortId(id)}`;
  }

  organizationList() {
    return [...this.organizations.values()].sort((a, b) => a.name.localeCompare(b.name));
  }

  organizationName(id) {
    if (!id || id === 'none') return 'No organization';
    return this.organizations.get(id)?.name ?? `organization ${shortId(id)}`;
  }

  /** A ticket field's title by its key (the key itself when unknown). */
  fieldTitle(key) {
    return this.fields.find((f) => f.key === key)?.title ?? key;
  }

  /** An SLA policy's name as it is now, or null when this role may not read policies
   * (or the policy is not among those read). */
  policyName(id) {
    return this.policies.get(id)?.name ?? null;
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
