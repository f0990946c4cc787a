// The page's connection to the space: a WebSocket to this origin that
// joins with the join message (browsers cannot set Authorization on a
// WebSocket), and reconnects after a drop until the gateway refuses it.

export const PROTOCOL = "mew/v0.4";

export class Conn {
  constructor({ space, cred, onEnvelope, onFrame, onState }) {
    this.space = space;
    this.cred = cred; // kept in memory only
    this.onEnvelope = onEnvelope;
    this.onFrame = onFrame;
    this.onState = onState;
    this.ws = null;
    this.me = "";
    this.closed = false;
    this.backoff = 500;
  }

  open() {
    const scheme = location.protocol === "https:" ? "wss:" : "ws:";
    const q = this.space ? "?space=" + encodeURIComponent(this.space) : "";
    const ws = new WebSocket(scheme + "//" + location.host + "/ws" + q);
    this.ws = ws;
    this.onState("connecting");
    ws.onopen = () => {
      ws.send(JSON.stringify({ type: "join", space: this.space || undefined, token: this.cred }));
    };
    ws.onmessage = (ev) => {
      if (typeof ev.data !== "string") return;
      if (ev.data.startsWith("#")) { this.onFrame(ev.data); return; }
      let env;
      try { env = JSON.parse(ev.data); } catch { return; }
      if (!env || typeof env !== "object" || typeof env.kind !== "string") return;
      if (env.kind === "system/welcome" && env.from === "system:gateway") {
        this.me = env.payload?.you?.id || this.me;
        this.backoff = 500;
        this.onState("connected");
      }
      this.onEnvelope(env);
    };
    ws.onclose = (ev) => {
      if (this.ws !== ws) return;
      if (this.closed) { this.onState("disconnected"); return; }
      if (ev.code === 1008) { this.closed = true; this.onState("refused", ev.reason); return; }
      this.onState("reconnecting");
      setTimeout(() => { if (!this.closed) this.open(); }, this.backoff);
      this.backoff = Math.min(this.backoff * 2, 15000);
    };
  }

  // send fills in protocol, id, ts and from, and sends env; it returns env.
  send(env) {
    const full = { protocol: PROTOCOL, id: crypto.randomUUID(), ts: new Date().toISOString(), from: this.me, ...env };
    if (!full.to?.length) delete full.to;
    if (!full.correlation_id?.length) delete full.correlation_id;
    if (this.ws?.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(full));
    return full;
  }

  close() {
    this.closed = true;
    this.ws?.close(1000);
  }

  // api calls a console endpoint of the gateway with the credential.
  async api(method, path) {
    const sep = path.includes("?") ? "&" : "?";
    const r = await fetch(path + (this.space ? sep + "space=" + encodeURIComponent(this.space) : ""), {
      method, headers: { Authorization: "Bearer " + this.cred, "X-Mew-Console": "1" }, credentials: "omit", cache: "no-store",
    });
    if (!r.ok) {
      const body = await r.json().catch(() => ({}));
      const err = new Error(method + " " + path + ": " + r.status + (typeof body.message === "string" ? " " + body.message : ""));
      err.status = r.status;
      err.code = typeof body.error === "string" ? body.error : "";
      throw err;
    }
    return r.status === 204 ? null : r.json();
  }
}

// exchange trades a one-time code for a session credential.
export async function exchange(code) {
  const r = await fetch("/console/session", {
    method: "POST", credentials: "omit", cache: "no-store",
    headers: { "Content-Type": "application/json", "X-Mew-Console": "1" },
    body: JSON.stringify({ code }),
  });
  const body = await r.json().catch(() => ({}));
  if (!r.ok) throw new Error(body.message || "the link was refused (" + r.status + ")");
  return body;
}
