// The approval queue: proposals addressed to me, or that I may carry out,
// wait here for Yes / Grant (scope, lifetime) / No (reason) / Edit, as in
// the terminal UI.
import { h, add, clear, short, json } from "./dom.js";
import { allows, exact, literal, valueMatches } from "./caps.js";

const LIFETIMES = [
  { id: "once", label: "once (no grant)" },
  { id: "600", label: "10 minutes", ttl: 600 },
  { id: "session", label: "this session" },
  { id: "forever", label: "until revoked" },
];
const REASONS = ["disagree", "unsafe", "not_now", "wrong_target"];

export class Approvals {
  constructor({ st, conn, queueEl }) {
    this.st = st;
    this.conn = conn;
    this.queueEl = queueEl;
    this.proposals = new Map(); // id -> {env, n, state, line}
    this.queue = []; // ids awaiting me, oldest first
    this.sessionGrants = new Map(); // grant id -> recipient, revoked when I leave
    this.reads = new Set(); // ids of the page's reads of files a proposal would replace
    this.nextN = 1;
    this.draw();
  }

  number(id) {
    const p = this.proposals.get(id);
    return p ? "#" + p.n : "?";
  }

  // renderProposal is the stream's entry for a proposal.
  renderProposal(env) {
    const p = { env, n: this.nextN++, state: "awaiting a decision", line: h("div", { class: "state" }) };
    this.proposals.set(env.id, p);
    const pl = env.payload || {};
    const tool = pl.method === "tools/call" ? pl.params?.name : pl.method;
    p.line.textContent = p.state;
    const mine = (env.to || []).includes(this.st.me) || allows(this.st.caps, "mcp/request", this.requestPayload(env));
    if (mine && env.from !== this.st.me) {
      this.queue.push(env.id);
      p.state = "awaiting your decision";
      p.line.textContent = p.state;
      this.listTools(env);
      this.draw();
    }
    return h("div", { class: "proposal-entry" },
      h("span", { class: "n" }, "#" + p.n + " "), h("strong", null, short(env.from, 60)), " proposes → ", short((env.to || []).join(", "), 80), ": ",
      h("span", { class: "call" }, short(tool, 80)), preview(pl), p.line);
  }

  // requestPayload is the mcp/request that fulfils a proposal, as matched.
  requestPayload(env) {
    const pl = env.payload || {};
    return { method: pl.method, params: pl.params };
  }

  listTools(env) {
    const target = env.to?.[0];
    if (!target || this.st.tools.has(target) || !allows(this.st.caps, "mcp/request", { method: "tools/list" })) return;
    this.conn.send({ kind: "mcp/request", to: [target], payload: { jsonrpc: "2.0", id: Date.now(), method: "tools/list", params: {} } });
  }

  // readOld asks the target for the file a proposed write_file would
  // replace, with a reader tool the target lists and I may call, so that
  // the dialog shows what changes (as the terminal UI does).
  readOld(p) {
    const pl = p.env.payload || {};
    const args = pl.params?.arguments;
    const target = p.env.to?.[0];
    if (p.reading || pl.method !== "tools/call" || pl.params?.name !== "write_file" || typeof args?.path !== "string" || typeof args?.content !== "string" || !target) return;
    const reader = ["read_text_file", "read_file"].find((t) => (this.st.tools.get(target) || []).includes(t));
    const call = { method: "tools/call", params: { name: reader, arguments: { path: args.path } } };
    if (!reader || !allows(this.st.caps, "mcp/request", call)) return;
    p.reading = this.conn.send({ kind: "mcp/request", to: [target], payload: { jsonrpc: "2.0", id: Date.now(), ...call } }).id;
    this.reads.add(p.reading);
  }

  // bookkeeping reports whether env is one of the page's own reads for a
  // diff, or its answer: the stream need not show them.
  bookkeeping(env) {
    return this.reads.has(env.id) || (env.kind === "mcp/response" && (env.correlation_id || []).some((id) => this.reads.has(id)));
  }

  // gotOld turns the reader's answer into the dialog's diff.
  gotOld(p, env) {
    const r = env.payload?.result;
    const text = (r?.content || []).filter((c) => c?.type === "text").map((c) => c.text).join("");
    const after = p.env.payload.params.arguments.content;
    p.diff = r?.isError || env.payload?.error ? { note: "a new file (nothing to compare with)" } : lineDiff(text, after);
    // Only the diff changes: a redraw of the whole dialog would throw away
    // a form the person is filling in (an edit, a grant, a reason).
    if (p.diffBox) add(clear(p.diffBox), [diffView(p.diff)]);
  }

  // observe follows decisions made anywhere: mine, someone else's, the
  // proposer's withdrawal.
  observe(env) {
    if (env.kind === "mcp/response") {
      for (const p of this.proposals.values()) {
        if (p.reading && env.correlation_id?.includes(p.reading) && !p.diff) this.gotOld(p, env);
      }
      const head = this.proposals.get(this.queue[0]);
      if (head && !head.reading) this.readOld(head); // the target's tools may just have arrived
    }
    const ref = env.correlation_id?.find((id) => this.proposals.has(id));
    if (!ref) return;
    const p = this.proposals.get(ref);
    let state = "";
    if (env.kind === "mcp/request") state = "approved by " + (env.from === this.st.me ? "you" : env.from);
    else if (env.kind === "mcp/reject") state = "rejected by " + (env.from === this.st.me ? "you" : env.from) + ": " + short(env.payload?.reason, 80) + (env.payload?.message ? " (" + short(env.payload.message, 200) + ")" : "");
    else if (env.kind === "mcp/withdraw") state = env.payload?.reason === "timeout" ? "timed out: nobody decided in time, so " + env.from + " withdrew it" : "withdrawn" + (env.payload?.reason ? ": " + short(env.payload.reason, 80) : "");
    else if (env.kind === "capability/grant") state = "granted by " + (env.from === this.st.me ? "you" : env.from);
    if (!state) return;
    p.state = state;
    p.line.textContent = state;
    if (env.kind !== "capability/grant") {
      this.queue = this.queue.filter((id) => id !== ref);
      this.draw();
    }
  }

  // observeApproval follows the gateway's word on a proposal the space's
  // approval policy governs (a feed "approval" event): its state line
  // says who must still approve and why, and the queue holds it while it
  // awaits me (an approver now who has not approved) or, approved, while I
  // may carry it out.
  observeApproval(ev) {
    const p = this.proposals.get(ev.proposal);
    if (!p) return;
    p.policy = ev;
    const me = this.st.me;
    const names = (l) => (l.length ? l.map((x) => (x === me ? "you" : x)).join(", ") : "nobody");
    const rule = "rule " + short(ev.rule, 60) + (ev.reason ? ": " + short(ev.reason, 160) : "");
    let line = "";
    switch (ev.state) {
      case "awaiting":
      case "escalated":
        line = (ev.state === "escalated" ? "escalated: " : "") + "awaiting " + ev.remaining + " more approval" + (ev.remaining === 1 ? "" : "s") +
          " of " + names(ev.approvers) + " (" + rule + ")" + (ev.approved_by.length ? "; approved by " + names(ev.approved_by) : "");
        break;
      case "approved": line = "approved by " + names(ev.approved_by) + " under " + rule + ": ready to carry out"; break;
      case "rejected": line = "rejected by " + names([ev.by]) + (ev.message ? ": " + short(ev.message, 200) : ""); break;
      case "withdrawn": line = "withdrawn by " + names([ev.by]) + (ev.message ? ": " + short(ev.message, 200) : ""); break;
      case "timed_out": line = "timed out: nobody approved in time (" + rule + ")"; break;
      case "fulfilled": line = "carried out by " + names([ev.by]); break;
      default: line = short(ev.state, 40);
    }
    p.state = line;
    p.line.textContent = line;
    const open = ev.state === "awaiting" || ev.state === "escalated";
    const awaitsMe = open && ev.approvers.includes(me) && !ev.approved_by.includes(me) && ev.proposer !== me;
    const mayCarryOut = ev.state === "approved" && p.env.from !== me && allows(this.st.caps, "mcp/request", this.requestPayload(p.env));
    const queued = this.queue.includes(ev.proposal);
    if (awaitsMe || mayCarryOut) {
      if (!queued) this.queue.push(ev.proposal);
      if (awaitsMe) this.listTools(p.env);
    } else if (queued) {
      this.queue = this.queue.filter((id) => id !== ev.proposal);
    }
    this.draw();
  }

  // focus brings proposal id first in the queue, if it waits there, and
  // marks its card (a webhook's link names it).
  focus(id) {
    if (!this.queue.includes(id)) return;
    this.queue = [id, ...this.queue.filter((x) => x !== id)];
    const p = this.proposals.get(id);
    if (p) p.focused = true;
    this.draw();
  }

  // awaitingMe counts the governed proposals waiting for my approval.
  awaitingMe() {
    let n = 0;
    for (const id of this.queue) {
      const pol = this.proposals.get(id)?.policy;
      if (pol && pol.state !== "approved") n++;
    }
    return n;
  }

  approve(env) {
    this.conn.send({ kind: "approval/approve", correlation_id: [env.id], payload: {} });
    this.done(env.id);
  }

  forget(grantID) {
    this.sessionGrants.delete(grantID);
  }

  endSession() {
    for (const [id, to] of this.sessionGrants) {
      this.conn.send({ kind: "capability/revoke", to: [to], payload: { recipient: to, grant_id: id, reason: "the web console session ended" } });
    }
    this.sessionGrants.clear();
  }

  // scopes are what a grant may cover, each checked against the very call.
  scopes(env) {
    const pl = env.payload || {};
    const call = this.requestPayload(env);
    const out = [];
    const tryScope = (id, label, make) => {
      let pattern = null, err = "";
      try {
        pattern = make();
        if (!valueMatches(pattern.payload, call)) err = "the pattern would not allow this call";
      } catch (e) { err = String(e.message || e); }
      out.push({ id, label, pattern, err });
    };
    if (pl.method !== "tools/call") {
      tryScope("exact", short(pl.method, 60) + " with these exact params", () => ({ kind: "mcp/request", payload: exact({ method: pl.method, params: pl.params }) }));
      return out;
    }
    const tool = String(pl.params?.name ?? "");
    tryScope("exact", short(tool, 60) + " with these exact arguments", () => ({ kind: "mcp/request", payload: exact({ method: "tools/call", params: { name: tool, arguments: pl.params?.arguments ?? {} } }) }));
    tryScope("tool", short(tool, 60) + " with any arguments", () => ({ kind: "mcp/request", payload: { method: "tools/call", params: { name: literal(tool) } } }));
    const target = env.to?.[0] || "";
    const tools = this.st.tools.get(target);
    tryScope("target", "every tool of " + short(target, 60) + (tools ? " (" + short(tools.join(", "), 100) + ")" : ""), () => {
      if (!tools?.length) throw new Error("its tools are not known");
      return { kind: "mcp/request", payload: { method: "tools/call", params: { name: tools.map(literal) } } };
    });
    return out;
  }

  draw() {
    const box = clear(this.queueEl);
    if (!this.queue.length) { box.append(h("p", { class: "dim" }, "nothing awaits you")); return; }
    const mine = this.awaitingMe();
    if (mine) box.append(h("p", { class: "awaiting-you" }, mine + " proposal" + (mine === 1 ? "" : "s") + " of this space await" + (mine === 1 ? "s" : "") + " your approval"));
    const id = this.queue[0];
    const p = this.proposals.get(id);
    this.readOld(p);
    box.append(this.dialog(p));
    if (this.queue.length > 1) box.append(h("p", { class: "dim" }, this.queue.length - 1 + " more waiting"));
  }

  dialog(p) {
    const env = p.env;
    const pl = env.payload || {};
    const body = h("div", { class: "choice" });
    p.diffBox = h("div", { class: "diff-box" }, diffView(p.diff));
    const card = h("div", { class: "proposal" + (p.focused ? " focused" : ""), "data-id": env.id },
      h("div", null, h("strong", null, "#" + p.n + " " + short(env.from, 60)), " → ", short((env.to || []).join(", "), 60), ": ",
        short(pl.method === "tools/call" ? pl.params?.name : pl.method, 80)),
      preview(pl), p.diffBox, body);
    const pol = p.policy;
    if (pol) {
      card.insertBefore(h("p", { class: "policy" }, "The space's approval rule " + short(pol.rule, 60) + (pol.reason ? " (" + short(pol.reason, 160) + ")" : "") +
        (pol.state === "approved" ? ": approved by " + pol.approved_by.join(", ") : ": " + pol.remaining + " more of " + pol.approvers.join(", ") + " must approve")), body);
    }
    const buttons = () => {
      clear(body);
      if (pol && pol.state !== "approved") {
        // Under the policy an approval is counted by the gateway; the
        // request comes once enough approvers have said yes.
        add(body, [
          h("button", { type: "button", class: "approve", onclick: () => this.approve(env) }, "Approve"),
          h("button", { type: "button", class: "no", onclick: () => noForm() }, "No"),
        ]);
        return;
      }
      if (pol) { // approved: carry it out as approved (the gateway binds the arguments)
        add(body, [
          h("button", { type: "button", class: "yes", onclick: () => this.fulfil(env) }, "Carry out"),
          h("button", { type: "button", class: "no", onclick: () => noForm() }, "No"),
        ]);
        return;
      }
      add(body, [
        h("button", { type: "button", class: "yes", onclick: () => this.fulfil(env) }, "Yes"),
        h("button", { type: "button", class: "grant", onclick: () => grantForm() }, "Grant…"),
        h("button", { type: "button", class: "no", onclick: () => noForm() }, "No"),
        h("button", { type: "button", class: "edit", onclick: () => editForm() }, "Edit"),
      ]);
    };
    const grantForm = () => {
      clear(body);
      const scopes = this.scopes(env);
      const first = scopes.find((s) => !s.err);
      body.append(h("p", null, "Fulfil it, and let " + short(env.from, 60) + " make such calls without asking:"));
      for (const s of scopes) {
        body.append(h("label", { class: "opt" + (s.err ? " off" : "") },
          h("input", { type: "radio", name: "scope", value: s.id, disabled: !!s.err, checked: s === first }), " ", s.label, s.err ? h("span", { class: "dim" }, " — " + s.err) : ""));
      }
      body.append(h("p", null, "For how long:"));
      for (const l of LIFETIMES) {
        body.append(h("label", { class: "opt" }, h("input", { type: "radio", name: "life", value: l.id, checked: l.id === "600" }), " ", l.label));
      }
      body.append(h("div", null,
        h("button", { type: "button", class: "grant-go", onclick: () => {
          const sid = body.querySelector("input[name=scope]:checked")?.value;
          const lid = body.querySelector("input[name=life]:checked")?.value;
          const scope = scopes.find((s) => s.id === sid);
          const life = LIFETIMES.find((l) => l.id === lid);
          if (!scope || scope.err || !life) return;
          this.grant(env, scope, life);
        } }, "Grant and fulfil"),
        h("button", { type: "button", class: "back", onclick: buttons }, "Back")));
    };
    const noForm = () => {
      clear(body);
      const sel = h("select", { class: "reason" }, REASONS.map((r) => h("option", { value: r }, r)));
      // The code is for programs; the words are for the proposer's reader,
      // as the terminal UI sends them (payload.message).
      const words = h("input", { class: "reject-message", type: "text", maxlength: "500", placeholder: "why, in your words (optional)" });
      body.append(h("label", null, "Reason ", sel), words,
        h("button", { type: "button", class: "no-go", onclick: () => this.reject(env, sel.value, words.value.trim()) }, "Reject"),
        h("button", { type: "button", class: "back", onclick: buttons }, "Back"));
    };
    const editForm = () => {
      clear(body);
      const args = pl.method === "tools/call" ? pl.params?.arguments ?? {} : pl.params ?? {};
      const ta = h("textarea", { class: "edit-args", rows: "8", spellcheck: "false" });
      ta.value = JSON.stringify(args, null, 2);
      const err = h("p", { class: "error" });
      body.append(h("p", null, pl.method === "tools/call" ? "Arguments:" : "Params:"), ta, err,
        h("button", { type: "button", class: "edit-go", onclick: () => {
          let v;
          try { v = JSON.parse(ta.value); } catch (e) { err.textContent = "not JSON: " + e.message; return; }
          if (!v || typeof v !== "object" || Array.isArray(v)) { err.textContent = "must be a JSON object"; return; }
          const params = pl.method === "tools/call" ? { ...pl.params, arguments: v } : v;
          this.fulfil(env, { method: pl.method, params });
        } }, "Fulfil edited"),
        h("button", { type: "button", class: "back", onclick: buttons }, "Back"));
    };
    buttons();
    return card;
  }

  fulfil(env, payload) {
    const pl = payload || this.requestPayload(env);
    this.conn.send({ kind: "mcp/request", to: env.to || [], correlation_id: [env.id], payload: { jsonrpc: "2.0", id: Date.now(), method: pl.method, params: pl.params } });
    this.done(env.id);
  }

  grant(env, scope, life) {
    if (life.id !== "once") {
      const payload = { recipient: env.from, capabilities: [scope.pattern], reason: "approved in the web console: " + scope.label + ", " + life.label };
      if (life.ttl) payload.ttl_seconds = life.ttl;
      if (life.id === "session") payload.session = true; // the gateway ends it when this page's participant leaves
      const g = this.conn.send({ kind: "capability/grant", to: [env.from], correlation_id: [env.id], payload });
      if (life.id === "session") this.sessionGrants.set(g.id, env.from);
    }
    this.fulfil(env);
  }

  reject(env, reason, message) {
    const payload = { reason };
    if (message) payload.message = message;
    this.conn.send({ kind: "mcp/reject", to: [env.from], correlation_id: [env.id], payload });
    this.done(env.id);
  }

  done(id) {
    this.queue = this.queue.filter((x) => x !== id);
    this.draw();
  }
}

// preview shows a proposal's arguments: a path first, a file's content as
// its lines.
export function preview(pl) {
  const args = pl?.method === "tools/call" ? pl.params?.arguments : pl?.params;
  if (!args || typeof args !== "object") return h("div", { class: "preview" });
  const keys = Object.keys(args).sort((a, b) => (b === "path") - (a === "path"));
  return h("div", { class: "preview" }, keys.slice(0, 30).map((k) => {
    const v = args[k];
    if (typeof v === "string" && (v.includes("\n") || k === "content")) {
      return h("div", null, h("span", { class: "k" }, k + ":"), h("pre", { class: "content" }, v.slice(0, 20000)));
    }
    return h("div", null, h("span", { class: "k" }, k + ": "), typeof v === "string" ? short(v, 300) : json(v, 300));
  }));
}

// maxDiffLines bounds each side of a diff: past it the lines are counted,
// not compared.
const maxDiffLines = 400;

// lineDiff compares two texts line by line (longest common subsequence) and
// returns {lines: [[op, text]...]}, op one of " ", "-", "+", with unchanged
// runs longer than six lines cut to their ends; or {note} when a side is
// too long to compare.
export function lineDiff(before, after) {
  const a = before.split("\n"), b = after.split("\n");
  if (a[a.length - 1] === "" && b[b.length - 1] === "") { a.pop(); b.pop(); } // both end with a newline
  if (a.length > maxDiffLines || b.length > maxDiffLines) return { note: a.length + " lines now, " + b.length + " after: too long to compare here" };
  const n = a.length, m = b.length;
  const lcs = Array.from({ length: n + 1 }, () => new Uint16Array(m + 1));
  for (let i = n - 1; i >= 0; i--) for (let j = m - 1; j >= 0; j--) lcs[i][j] = a[i] === b[j] ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
  const out = [];
  let i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && a[i] === b[j]) { out.push([" ", a[i]]); i++; j++; }
    else if (i < n && (j === m || lcs[i + 1][j] >= lcs[i][j + 1])) { out.push(["-", a[i]]); i++; }
    else { out.push(["+", b[j]]); j++; }
  }
  if (!out.some(([op]) => op !== " ")) return { note: "no change: the file already holds this" };
  const lines = [];
  for (let k = 0; k < out.length; k++) {
    const near = out.slice(Math.max(0, k - 3), k + 4).some(([op]) => op !== " ");
    if (near) lines.push(out[k]);
    else if (lines.length && lines[lines.length - 1][0] !== "…") lines.push(["…", ""]);
  }
  return { lines };
}

// diffView draws a lineDiff.
function diffView(d) {
  if (!d) return "";
  if (d.note) return h("p", { class: "diff-note dim" }, d.note);
  return h("pre", { class: "diff" }, d.lines.map(([op, text]) =>
    h("div", { class: op === "+" ? "add" : op === "-" ? "del" : "same" }, op === "…" ? "…" : op + " " + short(text, 500))));
}
