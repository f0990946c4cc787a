// The console's reading of the stream: envelopes to typed events, as
// internal/feed reads them for the terminal clients. Both are held to
// internal/feed/testdata/vectors.json (console/feed_test.go runs this file
// against it in Chromium); a change to one is a change to both.

export const MAX_REQUESTS = 1024;
export const MAX_PROPOSALS = 1024;
export const MAX_REASONINGS = 256;
export const MAX_TOOLS = 32;

const GATEWAY = "system:gateway";
const LEGACY_GATEWAY = "gateway";
// The kinds the reference gateway sends as "gateway".
const LEGACY_KINDS = new Set(["stream/open", "stream/write-granted", "stream/write-revoked", "stream/ownership-transferred", "system/error"]);

// fromGateway: whether the gateway said env (client.FromGateway).
export function fromGateway(env) {
  if (env.from === GATEWAY) return true;
  return env.from === LEGACY_GATEWAY && LEGACY_KINDS.has(env.kind);
}

// gatewayOnly: the kinds only the gateway may say.
function gatewayOnly(kind) {
  return kind.startsWith("system/") || kind === "floor/yield" || kind === "stream/open";
}

// Payload shapes, as the Go reader decodes them: s string, i integer, b
// boolean, s[] strings, [] any array, * anything; an object nests one, [x]
// is an array of x. null is allowed everywhere, as Go's decoder allows it.
const PARTICIPANT = { id: "s", capabilities: "[]" };
const STREAM_INFO = { stream_id: "s", owner: "s", authorized_writers: "s[]", created: "s", direction: "s", expected_size_bytes: "i", description: "s", content_type: "s", format: "s", metadata: "*", target: "s[]" };
const MCP = { jsonrpc: "s", id: "*", method: "s", params: "*", result: "*", error: { code: "i", message: "s", data: "*" } };
const CONTROL = { reason: "s", timeout_seconds: "i" };
const SHAPES = {
  "system/welcome": { you: PARTICIPANT, participants: [PARTICIPANT], active_streams: [STREAM_INFO] },
  "system/presence": { event: "s", participant: PARTICIPANT, invited_by: "s", reason: "s" },
  "system/error": { error: "s", message: "s", code: "s", attempted_kind: "s", your_capabilities: "[]", targets: "s[]", stream_id: "s" },
  "chat": { text: "s", format: "s" },
  "chat/acknowledge": { status: "s" },
  "mcp/request": MCP,
  "mcp/response": MCP,
  "mcp/proposal": MCP,
  "mcp/reject": { reason: "s", message: "s" },
  "mcp/withdraw": { reason: "s" },
  "reasoning/thought": { message: "s", input: "s", reasoning: "s", action: "s", actionInput: "*" },
  "reasoning/conclusion": { cancelled: "b", reason: "s" },
  "reasoning/cancel": { cancelled: "b", reason: "s" },
  "capability/grant": { recipient: "s", capabilities: "[]", reason: "s", expires_at: "s", ttl_seconds: "i", session: "b" },
  "capability/revoke": { recipient: "s", grant_id: "s", capabilities: "[]", reason: "s" },
  "capability/grant-ack": { status: "s" },
  "stream/open": { stream_id: "s", encoding: "s", owner: "s", authorized_writers: "s[]", target: "s[]", compression: "s" },
  "stream/close": { stream_id: "s", reason: "s" },
  "system/approval": { proposal: "s", rule: "s", reason: "s", state: "s", proposer: "s", approvers: "s[]", required: "i", approved_by: "s[]", remaining: "i", deadline: "s", by: "s", message: "s" },
};
const CONTROLS = ["participant/pause", "participant/resume", "participant/shutdown", "participant/restart", "participant/clear", "participant/compact", "participant/forget", "participant/request-status"];
for (const k of CONTROLS) SHAPES[k] = CONTROL;
const ELICITATION = new Set(["elicitation/request", "elicitation/response", "elicitation/done", "elicitation/refused"]);
const BOOKKEEPING = new Set(["chat/cancel", "participant/status", "participant/compact-done", "system/heartbeat", "floor/responding-to", "floor/yield", "stream/request"]);

// fits reports whether v has shape; top also refuses a member named as a
// known one in another case ("Text" for "text"), as the Go decoder does.
function fits(v, shape, top) {
  if (v === null || v === undefined || shape === "*") return true;
  if (shape === "s") return typeof v === "string";
  if (shape === "b") return typeof v === "boolean";
  if (shape === "i") return Number.isInteger(v);
  if (shape === "[]") return Array.isArray(v);
  if (shape === "s[]") return Array.isArray(v) && v.every((x) => x === null || typeof x === "string");
  if (Array.isArray(shape)) return Array.isArray(v) && v.every((x) => fits(x, shape[0], false));
  if (typeof v !== "object" || Array.isArray(v)) return false;
  const names = Object.keys(shape);
  for (const [k, x] of Object.entries(v)) {
    if (top && names.some((n) => n.length === k.length && n !== k && n.toLowerCase() === k.toLowerCase())) return false;
    if (Object.hasOwn(shape, k) && !fits(x, shape[k], false)) return false;
  }
  return true;
}

function str(v) { return typeof v === "string" ? v : ""; }
function strs(v) { return Array.isArray(v) ? v.map(str) : []; }

function listing(method) {
  return method.endsWith("/list") || method === "initialize" || method === "ping" || method.startsWith("notifications/");
}

function toolOf(method, params, to) {
  if (method !== "tools/call") return "";
  const name = params && typeof params === "object" && typeof params.name === "string" ? params.name : "";
  return to.length === 1 && name ? to[0] + "/" + name : name;
}

// sameJSON compares two JSON values whatever the order of their members.
function sameJSON(a, b) {
  if (a === b) return true;
  if (typeof a !== "object" || typeof b !== "object" || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return false;
  const ka = Object.keys(a), kb = Object.keys(b);
  return ka.length === kb.length && ka.every((k) => Object.hasOwn(b, k) && sameJSON(a[k], b[k]));
}

// The members of each event that are written even when empty (the Go
// event's fields without omitempty); the others are left out when empty.
const ALWAYS = new Set(["kind", "you", "participants", "participant", "event", "code", "text", "method", "proposal", "outcome", "by", "reasoning", "thoughts", "reasoner", "cause", "recipient", "stream", "rule", "state", "approvers", "required", "approved_by", "remaining"]);

function clean(ev) {
  for (const [k, v] of Object.entries(ev)) {
    if (ALWAYS.has(k) || k === "type") continue;
    if (v === undefined || v === null || v === "" || v === false || v === 0 || (Array.isArray(v) && v.length === 0)) delete ev[k];
  }
  return ev;
}

// rpcError is a JSON-RPC error with only its members, as Go keeps it.
function rpcError(e) {
  if (!e) return undefined;
  const out = { code: e.code ?? 0, message: str(e.message) };
  if (e.data !== undefined && e.data !== null) out.data = copy(e.data);
  return out;
}

function copy(v) { return v === undefined ? undefined : JSON.parse(JSON.stringify(v)); }

// Reader turns envelopes into events; read(env) returns them in the order
// a person should see them.
export class Reader {
  constructor() {
    this.requests = new Map();
    this.proposals = new Map();
    this.reasonings = new Map(); // in opening order
  }

  read(env) {
    if (!env || typeof env !== "object") return [];
    const kind = str(env.kind);
    const meta = () => ({ id: str(env.id), kind, from: str(env.from), to: strs(env.to) });
    if (gatewayOnly(kind) && !fromGateway(env)) return [clean({ type: "spoofed", ...meta() })];
    const p = env.payload === undefined || env.payload === null ? {} : env.payload;
    const shape = SHAPES[kind];
    if (shape && !fits(p, shape, true)) return [clean({ type: "malformed", ...meta() })];
    return this.interpret(env, kind, p, meta).map(clean);
  }

  interpret(env, kind, p, meta) {
    const from = str(env.from);
    const to = strs(env.to);
    const corr = strs(env.correlation_id);
    switch (kind) {
      case "system/welcome":
        return [{ type: "welcome", ...meta(), you: str(p.you?.id), participants: (p.participants || []).map((x) => str(x?.id)) }];
      case "system/presence": {
        const id = str(p.participant?.id);
        const evs = [{ type: "presence", ...meta(), participant: id, event: str(p.event) }];
        if (p.event === "leave") {
          for (const [rid, x] of [...this.reasonings]) if (x.from === id) evs.push(this.end(meta, rid, "left", false, ""));
        }
        return evs;
      }
      case "system/error":
        return [{ type: "system_error", ...meta(), code: str(p.error), message: str(p.message), attempted_kind: str(p.attempted_kind), correlation: corr }];
      case "chat": {
        const evs = [];
        for (const [rid, x] of this.reasonings) {
          if (x.from === from && x.question && corr.includes(x.question)) { evs.push(this.end(meta, rid, "answered", false, "")); break; }
        }
        evs.push({ type: "chat", ...meta(), text: str(p.text), format: str(p.format), correlation: corr });
        return evs;
      }
      case "chat/acknowledge":
        return [{ type: "chat_acked", ...meta(), chats: corr, status: str(p.status) }];
      case "mcp/request":
        return this.request(env, p, meta, from, to, corr);
      case "mcp/response":
        return this.response(p, meta, from, corr);
      case "mcp/proposal":
        return this.propose(env, p, meta, from);
      case "mcp/reject":
        return this.settle(meta, from, corr, "rejected", str(p.reason), str(p.message), false);
      case "mcp/withdraw":
        return this.settle(meta, from, corr, p.reason === "timeout" ? "timed_out" : "withdrawn", str(p.reason), "", true);
      case "system/approval":
        return this.approval(p, meta);
      case "approval/approve":
        if (corr.length !== 1) return [{ type: "malformed", ...meta() }];
        return [{ type: "approve", ...meta(), proposal: corr[0] }];
      case "reasoning/start":
        return this.start(env, meta, from, corr);
      case "reasoning/thought":
        return this.thought(env, p, meta, from);
      case "reasoning/conclusion":
      case "reasoning/cancel": {
        const id = str(env.context);
        const x = this.reasonings.get(id);
        if (!x || x.from !== from) return kind === "reasoning/cancel" ? [{ type: "control", ...meta(), reason: str(p.reason) }] : [];
        if (kind === "reasoning/cancel") return [this.end(meta, id, "cancelled", true, str(p.reason))];
        return [this.end(meta, id, "concluded", p.cancelled === true, str(p.reason))];
      }
      case "capability/grant":
        return [{ type: "granted", ...meta(), recipient: str(p.recipient), capabilities: copy(p.capabilities), ttl_seconds: p.ttl_seconds, expires_at: str(p.expires_at), session: p.session === true }];
      case "capability/revoke":
        return [{ type: "revoked", ...meta(), recipient: str(p.recipient), grant: str(p.grant_id), capabilities: copy(p.capabilities), reason: str(p.reason) }];
      case "capability/grant-ack":
        return [{ type: "grant_acked", ...meta(), grants: corr }];
      case "stream/open":
        return [{ type: "stream_opened", ...meta(), stream: str(p.stream_id), owner: str(p.owner), target: strs(p.target) }];
      case "stream/close":
        return [{ type: "stream_closed", ...meta(), stream: str(p.stream_id), reason: str(p.reason) }];
    }
    if (CONTROLS.includes(kind)) return [{ type: "control", ...meta(), reason: str(p.reason), timeout_seconds: p.timeout_seconds }];
    if (ELICITATION.has(kind)) return [{ type: "elicitation", ...meta() }];
    if (BOOKKEEPING.has(kind)) return [{ type: "bookkeeping", ...meta() }];
    return [{ type: "other", ...meta(), payload: env.payload === undefined ? undefined : copy(env.payload) }];
  }

  request(env, p, meta, from, to, corr) {
    const method = str(p.method);
    const req = { type: "request", ...meta(), method, params: copy(p.params), listing: listing(method), tool: toolOf(method, p.params, to), proposal: undefined };
    const evs = [req];
    if (env.id) {
      this.requests.set(env.id, { to, method, listing: req.listing, answered: false });
      if (this.requests.size > MAX_REQUESTS) this.requests.delete(this.requests.keys().next().value);
    }
    for (const id of corr) {
      const pr = this.proposals.get(id);
      if (!pr) continue;
      req.proposal = req.proposal || id;
      if (!pr.settled) {
        pr.settled = true;
        evs.push({ type: "proposal_settled", ...meta(), proposal: id, outcome: "approved", by: from, edited: !sameJSON(p.params ?? null, pr.params ?? null) });
      }
    }
    if (req.tool) {
      for (const [rid, x] of this.reasonings) {
        if (x.from !== from) continue;
        this.used(x, req.tool);
        evs.push(this.step(meta, rid, x, { calling: req.tool }));
      }
    }
    return evs;
  }

  response(p, meta, from, corr) {
    const ev = { type: "response", ...meta(), request: "", method: undefined, listing: false, result: copy(p.result), error: rpcError(p.error), is_error: !!p.error || p.result?.isError === true };
    for (const id of corr) {
      const q = this.requests.get(id);
      if (!q || (!q.listing && (q.answered || !(q.to.length === 0 || q.to.includes(from))))) continue;
      q.answered = true;
      ev.request = id;
      ev.method = q.method;
      ev.listing = q.listing;
      break;
    }
    return [ev];
  }

  propose(env, p, meta, from) {
    if (env.id) {
      if (this.proposals.has(env.id)) return [];
      this.proposals.set(env.id, { from, params: p.params, settled: false });
      if (this.proposals.size > MAX_PROPOSALS) this.proposals.delete(this.proposals.keys().next().value);
    }
    const method = str(p.method);
    const ev = { type: "proposal", ...meta(), method, params: copy(p.params), tool: toolOf(method, p.params, []) };
    const evs = [ev];
    for (const [rid, x] of this.reasonings) if (x.from === from) evs.push(this.step(meta, rid, x, { waiting: ev.tool || method }));
    return evs;
  }

  // approval reads the gateway's system/approval; a proposal the policy
  // let time out is settled by it.
  approval(p, meta) {
    if (!str(p.proposal) || !str(p.state)) return [{ type: "malformed", ...meta() }];
    const strList = (v) => (Array.isArray(v) ? v.map(str) : []);
    const evs = [{
      type: "approval", ...meta(), proposal: p.proposal, rule: str(p.rule), reason: str(p.reason), state: p.state, proposer: str(p.proposer),
      approvers: strList(p.approvers), required: p.required ?? 0, approved_by: strList(p.approved_by), remaining: p.remaining ?? 0,
      deadline: str(p.deadline), message: str(p.message),
    }];
    if (str(p.by)) evs[0].by = p.by; // "by" is kept when empty in other events, not here
    const pr = this.proposals.get(p.proposal);
    if (p.state === "timed_out" && pr && !pr.settled) {
      pr.settled = true;
      evs.push({ type: "proposal_settled", ...meta(), proposal: p.proposal, outcome: "timed_out", by: meta().from, reason: "the approval policy's rule " + str(p.rule) + " timed out" });
    }
    return evs;
  }

  settle(meta, from, corr, outcome, reason, message, proposerOnly) {
    const evs = [];
    for (const id of corr) {
      const pr = this.proposals.get(id);
      if (!pr || pr.settled || (proposerOnly && pr.from !== from)) continue;
      pr.settled = true;
      evs.push({ type: "proposal_settled", ...meta(), proposal: id, outcome, by: from, reason, message });
    }
    return evs;
  }

  // open returns the reasoning id names, opening it for from when new; null
  // when it is another's.
  open(meta, id, from) {
    const x = this.reasonings.get(id);
    if (x) return x.from === from ? [x, []] : [null, []];
    const evs = [];
    if (this.reasonings.size >= MAX_REASONINGS) evs.push(this.end(meta, this.reasonings.keys().next().value, "evicted", false, ""));
    const nx = { from, question: "", thoughts: 0, tools: [] };
    this.reasonings.set(id, nx);
    evs.push({ type: "reasoning_started", ...meta(), reasoning: id, question: "" });
    return [nx, evs];
  }

  start(env, meta, from, corr) {
    if (!env.id) return [];
    const [x, evs] = this.open(meta, env.id, from);
    if (!x || evs.length === 0) return [];
    if (corr.length) {
      x.question = corr[0];
      evs[evs.length - 1].question = x.question;
    }
    return evs;
  }

  thought(env, p, meta, from) {
    const id = str(env.context);
    if (!id) return [];
    const [x, evs] = this.open(meta, id, from);
    if (!x) return [];
    x.thoughts++;
    const thought = {};
    for (const k of ["message", "input", "reasoning", "action"]) if (p[k]) thought[k] = p[k];
    if (p.actionInput !== undefined && p.actionInput !== null) thought.actionInput = copy(p.actionInput);
    evs.push(this.step(meta, id, x, { thought }));
    return evs;
  }

  end(meta, id, cause, cancelled, reason) {
    const x = this.reasonings.get(id);
    this.reasonings.delete(id);
    return { type: "reasoning_ended", ...meta(), reasoning: id, reasoner: x.from, cause, thoughts: x.thoughts, tools: [...x.tools], cancelled, reason };
  }

  step(meta, id, x, fields) {
    return { type: "reasoning_step", ...meta(), reasoning: id, thoughts: x.thoughts, tools: [...x.tools], ...fields };
  }

  used(x, tool) {
    if (tool && !x.tools.includes(tool) && x.tools.length < MAX_TOOLS) x.tools.push(tool);
  }
}
