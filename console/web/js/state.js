// What the page knows of the space, built from the envelopes it has seen.

export const MAX_ENVELOPES = 3000;

export class State {
  constructor() {
    this.me = "";
    this.caps = [];
    this.participants = new Map(); // id -> {id, capabilities, connected, status}
    this.envs = []; // in arrival order, at most MAX_ENVELOPES
    this.byId = new Map();
    this.children = new Map(); // id -> ids of envelopes that correlate to it or run in its context
    this.tools = new Map(); // participant -> tool names, from tools/list answers
    this.streams = new Map(); // stream id -> {id, owner, opened, frames, bytes, last, closed}
    this.traffic = []; // {t, from, to[]} of the last minute
    this.defaultTo = {}; // kind -> default recipients (GET /console/me)
  }

  add(env) {
    if (!env.id || this.byId.has(env.id)) return false;
    env._t = Date.now();
    this.envs.push(env);
    this.byId.set(env.id, env);
    for (const p of this.parents(env)) {
      if (!this.children.has(p)) this.children.set(p, []);
      this.children.get(p).push(env.id);
    }
    if (this.envs.length > MAX_ENVELOPES) {
      const old = this.envs.shift();
      this.byId.delete(old.id);
      this.children.delete(old.id);
    }
    if (!String(env.from).startsWith("system:")) {
      this.traffic.push({ t: env._t, from: env.from, to: Array.isArray(env.to) ? env.to : [] });
    }
    return true;
  }

  // parents are the envelopes env follows: those it correlates to, and the
  // reasoning it runs in.
  parents(env) {
    const out = Array.isArray(env.correlation_id) ? env.correlation_id.filter((x) => typeof x === "string") : [];
    if (typeof env.context === "string" && env.context && !out.includes(env.context)) out.push(env.context);
    return out;
  }

  recentTraffic(ms = 60000) {
    const since = Date.now() - ms;
    while (this.traffic.length && this.traffic[0].t < since) this.traffic.shift();
    return this.traffic;
  }

  // chain returns the envelopes linked to id, up to its root and down to
  // everything that followed from them, oldest first.
  chain(id) {
    let root = this.byId.get(id);
    if (!root) return [];
    for (let i = 0; i < 64; i++) {
      const up = this.parents(root).map((p) => this.byId.get(p)).find(Boolean);
      if (!up) break;
      root = up;
    }
    const seen = new Set([root.id]);
    const queue = [root.id];
    while (queue.length && seen.size < 200) {
      for (const c of this.children.get(queue.shift()) || []) {
        if (!seen.has(c) && this.byId.has(c)) { seen.add(c); queue.push(c); }
      }
    }
    return this.envs.filter((e) => seen.has(e.id));
  }
}
