// The portal's live feed (WS /v1/portal/stream): the public events of the contact's
// own tickets, chosen by the database's row-level security. Each event says which
// ticket changed; the page reads it again over REST. After a disconnect it connects
// again with backoff and resumes after the last seq it saw; a gap (too far behind)
// means "reload what you show".

export class PortalFeed {
  constructor(session, {onEvent, onGap, onStatus}) {
    this.session = session;
    this.onEvent = onEvent;
    this.onGap = onGap;
    this.onStatus = onStatus;
    this.lastSeq = null;
    this.socket = null;
    this.stopped = false;
    this.backoff = 500;
  }

  start() {
    this.stopped = false;
    this.connect();
  }

  stop() {
    this.stopped = true;
    this.socket?.close(1000, 'signed out');
    this.socket = null;
  }

  connect() {
    if (this.stopped || !this.session.token) return;
    const scheme = location.protocol === 'https:' ? 'wss:' : 'ws:';
    const socket = new WebSocket(`${scheme}//${location.host}/v1/portal/stream`);
    this.socket = socket;
    socket.addEventListener('open', () => {
      const auth = {op: 'auth', token: this.session.token};
      if (this.lastSeq !== null) auth.after_seq = this.lastSeq;
      socket.send(JSON.stringify(auth));
    });
    socket.addEventListener('message', (message) => {
      const data = JSON.parse(message.data);
      if (data.type === 'authenticated') {
        this.backoff = 500;
        if (this.lastSeq === null) this.lastSeq = data.head_seq;
        this.onStatus(true);
      } else if (data.type === 'event') {
        this.lastSeq = data.seq;
        this.onEvent(data.event);
      } else if (data.type === 'gap') {
        this.lastSeq = data.head_seq;
        this.onGap();
      }
    });
    socket.addEventListener('close', async (event) => {
      if (this.socket !== socket) return;
      this.onStatus(false);
      if (this.stopped) return;
      // A token that expired before the socket opened: renew it, then connect again.
      if (event.code === 4401 && !(await this.session.refresh())) return;
      setTimeout(() => this.connect(), this.backoff);
      this.backoff = Math.min(this.backoff * 2, 15_000);
    });
  }
}
