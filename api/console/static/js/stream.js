// The live feed (/v1/stream, docs/websocket.md) for the views: one WebSocket per tab,
// authenticated by its first message, shared by every view's rooms.
//
// A view subscribes to a room ("tenant" or "ticket:<id>") with callbacks: onLive({resumed})
// once the room is live (load what to show then, so nothing between the load and the
// first event is missed; ``resumed``: the server replayed what the view missed, no
// reload needed), onEvent for each event, onGap when the server dropped events (the
// view says so and reloads; the feed resubscribes from the gap's head_seq itself).
// After a disconnect the feed reconnects with backoff and resumes each room from the
// last seq it saw, so the server replays what came in between.
//
// Presence (docs/websocket.md, "Presence"): ``present(ticketId, state)`` says this agent
// is viewing a ticket, typing on it, or gone from it; what it last said is said again
// after a reconnect. A ticket room's onPresence gets the server's ``presence_list`` (right
// after onLive, when anyone is there) and each ``presence`` change of someone else.

const HEARTBEAT_GRACE = 3;

export class LiveFeed {
  constructor(session, onStatus) {
    this.session = session;
    this.onStatus = onStatus;
    this.rooms = new Map(); // room -> {handlers: Set, lastSeq}
    this.presence = new Map(); // ticket id -> what this tab last said of itself there
    this.socket = null;
    this.retry = 0;
    this.timer = null;
    this.watchdog = null;
    this.heartbeatMs = 15_000;
    this.stopped = true;
  }

  /** Listen to ``room``; returns the function that stops listening. */
  subscribe(room, handlers) {
    let entry = this.rooms.get(room);
    const fresh = !entry;
    if (!entry) {
      entry = {handlers: new Set(), lastSeq: null, live: false, resumed: false};
      this.rooms.set(room, entry);
    }
    entry.handlers.add(handlers);
    if (this.stopped) this.start();
    else if (fresh) this.send({op: 'subscribe', room});
    else if (entry.live) handlers.onLive?.({resumed: false});
    return () => {
      entry.handlers.delete(handlers);
      if (entry.handlers.size === 0) {
        this.rooms.delete(room);
        this.send({op: 'unsubscribe', room});
      }
    };
  }

  /** Say ``state`` ('viewing', 'typing' or 'gone') of this agent on a ticket. */
  present(ticketId, state) {
    if (state === 'gone') {
      if (!this.presence.delete(ticketId)) return;
    } else {
      this.presence.set(ticketId, state);
    }
    this.send({op: 'presence', ticket_id: ticketId, state});
  }

  start() {
    this.stopped = false;
    this.connect();
  }

  /** Close for good (sign-out). */
  stop() {
    this.stopped = true;
    clearTimeout(this.timer);
    clearTimeout(this.watchdog);
    this.rooms.clear();
    this.presence.clear();
    if (this.socket) this.socket.close(1000, 'signed out');
    this.socket = null;
    this.status('off');
  }

  status(state, detail) {
    this.onStatus?.(state, detail);
  }

  send(message) {
    if (this.socket?.readyState === WebSocket.OPEN && this.authenticated) {
      this.socket.send(JSON.stringify(message));
    }
  }

  connect() {
    const token = this.session.feedToken();
    if (!token || this.stopped) return;
    const scheme = window.location.protocol === 'https:' ? 'wss' : 'ws';
    const socket = new WebSocket(`${scheme}://${window.location.host}/v1/stream`);
    this.socket = socket;
    this.authenticated = false;
    this.status('connecting');
    socket.addEventListener('open', () => {
      socket.send(JSON.stringify({op: 'auth', token}));
    });
    socket.addEventListener('message', (message) => {
      if (socket !== this.socket) return;
      this.alive();
      let data;
      try {
        data = JSON.parse(message.data);
      } catch {
        return;
      }
      this.receive(data);
    });
    socket.addEventListener('close', (event) => {
      if (socket !== this.socket) return;
      this.socket = null;
      clearTimeout(this.watchdog);
      if (this.stopped) return;
      for (const entry of this.rooms.values()) entry.live = false;
      if (event.code === 4401 || event.code === 4403 || event.code === 4400) {
        // Refused: the key is not good for the feed; reconnecting would not help.
        this.stopped = true;
        this.status('refused', `${event.code} ${event.reason}`);
        return;
      }
      const wait = event.code === 4408 ? 0 : Math.min(15_000, 1000 * 2 ** this.retry);
      this.retry += 1;
      this.status('reconnecting', event.reason || `closed (${event.code})`);
      this.timer = setTimeout(() => this.connect(), wait);
    });
  }

  /** No message for a few heartbeats: the connection is dead though not closed. */
  alive() {
    clearTimeout(this.watchdog);
    this.watchdog = setTimeout(() => this.socket?.close(4000, 'no heartbeat'),
      this.heartbeatMs * HEARTBEAT_GRACE);
  }

  receive(data) {
    switch (data.type) {
      case 'authenticated':
        this.authenticated = true;
        this.retry = 0;
        this.heartbeatMs = (data.heartbeat_seconds ?? 15) * 1000;
        for (const [room, entry] of this.rooms) {
          entry.resumed = entry.lastSeq !== null;
          const resume = entry.resumed ? {after_seq: entry.lastSeq} : {};
          this.send({op: 'subscribe', room, ...resume});
        }
        for (const [ticketId, state] of this.presence) {
          this.send({op: 'presence', ticket_id: ticketId, state});
        }
        break;
      case 'subscribed': {
        const entry = this.rooms.get(data.room);
        if (!entry) break;
        entry.live = true;
        if (entry.lastSeq === null) entry.lastSeq = data.head_seq;
        this.status('live');
        // Resumed: what came in between was replayed, so what the view shows is whole.
        const resumed = Boolean(entry.resumed);
        entry.resumed = false;
        for (const handlers of entry.handlers) handlers.onLive?.({resumed});
        break;
      }
      case 'event': {
        const entry = this.rooms.get(data.room);
        if (!entry) break;
        entry.lastSeq = data.seq;
        for (const handlers of entry.handlers) handlers.onEvent?.(data.event, data.seq);
        break;
      }
      case 'gap': {
        const entry = this.rooms.get(data.room);
        if (!entry) break;
        entry.lastSeq = data.head_seq;
        entry.live = false;
        for (const handlers of entry.handlers) handlers.onGap?.(data.head_seq);
        entry.resumed = true; // the view refetched on the gap
        this.send({op: 'subscribe', room: data.room, after_seq: data.head_seq});
        break;
      }
      case 'presence':
      case 'presence_list': {
        const entry = this.rooms.get(data.room);
        if (!entry) break;
        for (const handlers of entry.handlers) handlers.onPresence?.(data);
        break;
      }
      case 'error':
        // A refused presence (a ticket not found, a flood) is no fault of the feed.
        if (data.op === 'presence') break;
        this.status('error', `${data.code}: ${data.detail}`);
        break;
      default:
        break; // heartbeats, pongs
    }
  }
}
