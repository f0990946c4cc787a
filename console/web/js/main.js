// The space view: joining, the live stream with a renderer per kind,
// compose, participants, grants, streams; approvals and pictures have
// modules of their own.
import { h, add, clear, short, json } from "./dom.js";
import { markdown } from "./md.js";
import { allows } from "./caps.js";
import { Conn, exchange } from "./conn.js";
import { State } from "./state.js";
import { Approvals } from "./approve.js";
import { Elicitations } from "./elicit.js";
import { richContent, placeholder } from "./content.js";
import { drawChain, drawMap } from "./pictures.js";
import { lineageSteps } from "./lineage.js";
import { Reader } from "./feed.js";

const $ = (sel) => document.querySelector(sel);
const HIDDEN = new Set(["elicitation/response", "elicitation/done", "elicitation/refused", "chat/acknowledge", "system/heartbeat", "participant/status", "capability/grant-ack",
  "floor/responding-to", "floor/yield", "participant/compact-done", "system/welcome"]);
const CONTROLS = [
  ["participant/pause", "Pause"], ["participant/resume", "Resume"], ["participant/request-status", "Status"],
  ["participant/forget", "Forget"], ["participant/compact", "Compact"], ["participant/clear", "Clear"],
  ["participant/restart", "Restart"], ["participant/shutdown", "Shutdown"],
];

// CONTEXT_CONTROLS act on a conversation's context: they mean something only
// to a participant that keeps one (an agent), not to a calculator.
const CONTEXT_CONTROLS = new Set(["participant/forget", "participant/compact", "participant/clear"]);

// hasContext reports whether p keeps a conversation: its status reports a
// context, or it may reason (agents do; people and tools do not).
function hasContext(p) {
  if (p.status && (p.status.messages_in_context !== undefined || p.status.tokens !== undefined)) return true;
  return (p.capabilities || []).some((c) => {
    const k = Array.isArray(c?.kind) ? c.kind : [c?.kind];
    return k.some((x) => typeof x === "string" && x.startsWith("reasoning/"));
  });
}

const st = new State();
let conn = null;
const requests = new Map(); // request id -> its entry, for pairing the answer
const thinking = new Map(); // reasoning id -> its line: {el, from, n, started, last, ended, cancel}
let approvals = null;
let focusProposal = "";
let elicits = null;
let reader = new Reader(); // the stream read as the terminal clients read it (internal/feed)

function app() {
  const root = $("#app");
  add(root, [
    h("header", null,
      h("h1", null, "mew"),
      h("span", { id: "status", class: "status" }, "not joined"),
      h("span", { id: "whoami" }),
      h("button", { id: "leave", type: "button", hidden: true, onclick: leave }, "Leave")),
    h("section", { id: "login" },
      h("form", { id: "login-form", autocomplete: "off", onsubmit: (e) => { e.preventDefault(); joinWithToken(); } },
        h("h2", null, "Join a space"),
        h("label", null, "Space ", h("input", { id: "login-space", name: "space", placeholder: "(the gateway's only space)" })),
        h("label", null, "Token ", h("input", { id: "login-token", name: "token", type: "password", required: true })),
        h("button", { id: "login-go", type: "submit" }, "Join"),
        h("p", { id: "login-error", class: "error" }),
        h("p", { class: "hint" }, "The token stays in this page's memory: it is not stored, and a reload asks again. ",
          "mew space connect --web prints a one-time link instead."))),
    h("main", { id: "space", hidden: true },
      h("section", { id: "left" },
        h("div", { id: "stream", role: "log", "aria-live": "polite" }),
        h("form", { id: "compose", onsubmit: (e) => { e.preventDefault(); sendLine(); } },
          h("div", { id: "complete", hidden: true }),
          h("input", { id: "compose-input", autocomplete: "off", placeholder: "message · @id to address · {json} for an envelope" }),
          h("button", { type: "submit" }, "Send"))),
      h("aside", { id: "right" },
        h("section", { id: "approvals" }, h("h2", null, "Approvals"), h("div", { id: "queue" })),
        h("section", null, h("h2", null, "Participants"), h("div", { id: "participants" })),
        h("section", null, h("h2", null, "Grants ", h("button", { id: "grants-refresh", type: "button", onclick: refreshGrants }, "↻")),
          h("div", { id: "grants" })),
        h("section", null, h("h2", null, "Streams"), h("div", { id: "streams" })),
        h("section", null, h("h2", null, "Who talks to whom (last minute)"), h("div", { id: "map" })))),
    h("section", { id: "chain", hidden: true },
      h("div", { class: "chain-head" }, h("h2", null, "Correlation chain"),
        h("button", { id: "chain-close", type: "button", onclick: () => { $("#chain").hidden = true; } }, "Close")),
      h("div", { id: "chain-svg" })),
  ]);
  const input = $("#compose-input");
  input.addEventListener("input", complete);
  input.addEventListener("keydown", completeKey);
}

// --- joining ---

async function boot() {
  app();
  // A one-time link puts its code in the fragment: read it, then remove it
  // from the address bar and the history before anything else.
  const frag = new URLSearchParams(location.hash.slice(1));
  if (frag.has("code")) {
    history.replaceState(null, "", location.pathname);
    focusProposal = frag.get("proposal") || ""; // a webhook's link opens the proposal it is about
    const code = frag.get("code");
    try {
      const s = await exchange(code);
      start(s.space, s.session);
    } catch (e) {
      $("#login-space").value = frag.get("space") || "";
      $("#login-error").textContent = String(e.message || e);
    }
  }
}

function joinWithToken() {
  const tok = $("#login-token").value.trim();
  $("#login-token").value = "";
  if (tok) start($("#login-space").value.trim(), tok);
}

function start(space, cred) {
  reader = new Reader();
  conn = new Conn({ space, cred, onEnvelope, onFrame, onState });
  approvals = new Approvals({ st, conn, queueEl: $("#queue"), onChange: () => {} });
  elicits = new Elicitations({ st, conn });
  conn.open();
  setInterval(tick, 1000);
}

function leave() {
  approvals?.endSession();
  if (conn && conn.cred.startsWith("mcs_")) conn.api("DELETE", "/console/session").catch(() => {});
  conn?.close();
}

function onState(state, reason) {
  const el = $("#status");
  el.textContent = state + (reason ? ": " + short(reason, 80) : "");
  el.dataset.state = state;
  if (state === "refused") {
    $("#space").hidden = true;
    $("#login").hidden = false;
    $("#login-error").textContent = "The gateway refused to join: " + (reason || "refused");
  }
}

// --- the stream ---

function onEnvelope(env) {
  const evs = reader.read(env);
  // A gateway-only kind the gateway did not send is not believed; a payload
  // that does not decode is said, and nothing else is taken from it.
  if (evs.some((e) => e.type === "spoofed")) return;
  if (evs.some((e) => e.type === "malformed")) {
    if (st.add(env)) showEntry(env, h("div", { class: "sys-error" }, "! ", short(env.from, 60), " sent a ", short(env.kind, 60), " that cannot be read"));
    return;
  }
  if (env.kind === "system/welcome") return welcome(env);
  if (!st.add(env)) return;
  answerMCP(env);
  track(env);
  const opened = followReasoning(env, evs);
  if (opened) showEntry(env, opened);
  if (approvals.bookkeeping(env)) {
    approvals.observe(env); // the diff, not an entry
    return;
  }
  const el = render(env, evs);
  if (el) showEntry(env, el);
  approvals.observe(env);
  for (const e of evs) if (e.type === "approval") approvals.observeApproval(e);
  elicits.observe(env);
}

// showEntry appends env's entry to the stream, keeping a reader at the end
// there.
function showEntry(env, el) {
  el.dataset.id = env.id;
  el.dataset.kind = env.kind;
  el.classList.add("entry");
  el.append(h("button", { type: "button", class: "chain-btn", title: "show the correlation chain", onclick: () => showChain(env.id) }, "chain"));
  const stream = $("#stream");
  const atEnd = stream.scrollHeight - stream.scrollTop - stream.clientHeight < 40;
  stream.append(el);
  while (stream.childElementCount > 2000) stream.firstElementChild.remove();
  if (atEnd) stream.scrollTop = stream.scrollHeight;
}

// answerMCP answers the MCP requests addressed to this page at once, as
// every participant of ours does: it offers no tools (an empty list is an
// answer, so an agent's discovery does not wait for a silent peer), answers
// ping, and refuses other methods; notifications need no answer.
function answerMCP(env) {
  if (env.kind !== "mcp/request" || env.from === st.me || !(env.to || []).includes(st.me)) return;
  const p = env.payload || {};
  if (p.id === undefined || p.id === null || typeof p.method !== "string") return;
  const reply = { jsonrpc: "2.0", id: p.id };
  if (p.method === "tools/list") reply.result = { tools: [] };
  else if (p.method === "ping") reply.result = {};
  else reply.error = { code: -32601, message: "the web console serves no " + short(p.method, 60) };
  conn.send({ kind: "mcp/response", to: [env.from], correlation_id: [env.id], payload: reply });
}

function welcome(env) {
  const p = env.payload || {};
  st.me = p.you?.id || st.me;
  st.caps = Array.isArray(p.you?.capabilities) ? p.you.capabilities : [];
  for (const x of p.participants || []) upsert(x.id, { capabilities: x.capabilities || [], connected: true });
  upsert(st.me, { capabilities: st.caps, connected: true });
  for (const s of p.active_streams || []) st.streams.set(s.stream_id, { id: s.stream_id, owner: s.owner, frames: 0, bytes: 0, last: "" });
  $("#login").hidden = true;
  $("#space").hidden = false;
  $("#leave").hidden = false;
  $("#whoami").textContent = (conn.space ? conn.space + " · " : "") + "me " + st.me;
  fetch("/participants" + (conn.space ? "?space=" + encodeURIComponent(conn.space) : ""), { credentials: "omit" })
    .then((r) => r.json()).then((b) => {
      for (const x of b.participants || []) upsert(x.id, { capabilities: x.capabilities || [], connected: !!x.connected });
      drawParticipants();
    }).catch(() => {});
  drawParticipants();
  refreshGrants();
  drawStreams();
  conn.api("GET", "/console/me").then((b) => { st.defaultTo = b?.default_to || {}; }).catch(() => {});
  loadApprovals();
}

// loadApprovals shows the proposals the space's approval policy governs
// that were made before the page joined and still await approvers or their
// fulfilment (GET /console/approvals); the one a webhook's link names comes
// first in the queue.
async function loadApprovals() {
  let body;
  try { body = await conn.api("GET", "/console/approvals"); } catch { return; }
  for (const x of Array.isArray(body?.approvals) ? body.approvals : []) {
    const env = x?.envelope;
    if (!env || typeof env.id !== "string" || env.kind !== "mcp/proposal" || approvals.proposals.has(env.id)) continue;
    reader.read(env);
    if (!st.add(env)) continue;
    showEntry(env, approvals.renderProposal(env));
    for (const e of reader.read({ protocol: env.protocol, id: "", kind: "system/approval", from: "system:gateway", correlation_id: [env.id], payload: x.state })) {
      if (e.type === "approval") approvals.observeApproval(e);
    }
  }
  if (focusProposal) approvals.focus(focusProposal);
  focusProposal = "";
}

function upsert(id, fields) {
  if (typeof id !== "string" || !id) return;
  st.participants.set(id, { id, capabilities: [], connected: false, status: null, ...st.participants.get(id), ...fields });
}

// track updates the side panels from what env says.
function track(env) {
  const p = env.payload || {};
  switch (env.kind) {
    case "system/presence":
      if (p.participant?.id) upsert(p.participant.id, { connected: p.event === "join", ...(p.participant.capabilities ? { capabilities: p.participant.capabilities } : {}) });
      drawParticipants();
      break;
    case "participant/status":
      upsert(env.from, { status: p });
      drawParticipants();
      break;
    case "capability/grant":
    case "capability/revoke":
      setTimeout(refreshGrants, 150);
      break;
    case "stream/open":
      st.streams.set(p.stream_id, { id: p.stream_id, owner: p.owner || env.to?.[0] || "", frames: 0, bytes: 0, last: "" });
      drawStreams();
      break;
    case "stream/close": {
      const s = st.streams.get(p.stream_id);
      if (s) s.closed = true;
      drawStreams();
      break;
    }
    case "mcp/response": {
      const req = st.byId.get(env.correlation_id?.[0]);
      if (req?.payload?.method === "tools/list" && Array.isArray(p.result?.tools)) {
        st.tools.set(env.from, p.result.tools.map((t) => t?.name).filter((n) => typeof n === "string"));
      }
      break;
    }
  }
}

function who(env) {
  const to = Array.isArray(env.to) && env.to.length ? " → " + env.to.join(", ") : "";
  return h("span", { class: "who" }, h("span", { class: "from", "data-hue": hue(env.from) }, short(env.from, 60)), short(to, 120));
}

function hue(id) {
  let x = 0;
  for (const c of String(id)) x = (x * 31 + c.charCodeAt(0)) >>> 0;
  return String(x % 8);
}

function render(env, evs) {
  const p = env.payload || {};
  const from = String(env.from || "");
  if (from.startsWith("system:") && !["system/error", "system/presence", "stream/open", "stream/close", "capability/grant", "capability/revoke"].includes(env.kind)) return null;
  if (HIDDEN.has(env.kind)) return null;
  switch (env.kind) {
    case "chat":
      return h("div", { class: "chat" }, who(env), ": ", h("div", { class: "md" }, markdown(p.text)));
    case "mcp/request":
      return renderRequest(env);
    case "mcp/response":
      return renderResponse(env, evs.find((e) => e.type === "response"));
    case "mcp/proposal":
      return approvals.renderProposal(env);
    case "elicitation/request":
      return elicits.render(env);
    case "mcp/reject":
    case "mcp/withdraw":
      return null; // the proposal's state line says it
    case "approval/approve":
      return h("div", { class: "approval" }, who(env), " approves proposal ", approvals.number(env.correlation_id?.[0]));
    case "reasoning/start":
    case "reasoning/thought":
    case "reasoning/conclusion":
    case "reasoning/cancel":
      return null; // followReasoning draws them
    case "system/presence":
      return h("div", { class: "presence" }, "* ", short(p.participant?.id, 60), p.event === "join" ? " joined" : p.event === "leave" ? " left" : " " + short(p.event, 20));
    case "system/error":
      return h("div", { class: "sys-error" }, "! ", short(p.error, 60), ": ", short(p.message, 400), p.attempted_kind ? " (" + short(p.attempted_kind, 60) + ")" : "");
    case "stream/open":
      return h("div", { class: "stream-line" }, "≈ stream ", short(p.stream_id, 40), " opened", env.to?.length ? " for " + env.to.join(", ") : "");
    case "stream/close":
      return h("div", { class: "stream-line" }, "≈ stream ", short(p.stream_id, 40), " closed");
    case "capability/grant":
      return h("div", { class: "grant-line" }, who(env), ": grants ", short(p.recipient, 60), " ", json(p.capabilities, 300),
        p.ttl_seconds ? " for " + p.ttl_seconds + " s" : "");
    case "capability/revoke":
      return h("div", { class: "grant-line" }, who(env), ": revokes ", p.grant_id ? "grant " + short(p.grant_id, 60) : json(p.capabilities, 200), " of ", short(p.recipient, 60));
    default:
      return h("div", { class: "other" }, who(env), " ", h("span", { class: "kind" }, short(env.kind, 60)), " ", json(p, 300));
  }
}

function callText(p) {
  if (p.method === "tools/call") return short(p.params?.name, 80) + "(" + argsText(p.params?.arguments) + ")";
  return short(p.method, 80) + (p.params ? " " + json(p.params, 200) : "");
}

export function argsText(args) {
  if (!args || typeof args !== "object") return "";
  return Object.entries(args).map(([k, v]) => k + ": " + (typeof v === "string" ? short(v, 60) : json(v, 60))).join(", ");
}

function renderRequest(env) {
  const p = env.payload || {};
  if (typeof p.method !== "string" || p.method === "tools/list" || p.method === "initialize" || p.method.startsWith("notifications/")) return null;
  const proposal = env.correlation_id?.map((id) => st.byId.get(id)).find((e) => e?.kind === "mcp/proposal");
  const el = h("div", { class: "request" }, who(env), ": ", h("span", { class: "call" }, callText(p)),
    proposal ? h("span", { class: "dim" }, "  (proposal " + approvals.number(proposal.id) + ")") : "",
    h("div", { class: "answers" }));
  requests.set(env.id, { env, el });
  return el;
}

// resultText is the text of an MCP answer: its content's texts, else JSON.
function resultText(p) {
  if (p.error) return { err: true, text: (p.error.message ? short(p.error.message, 400) : json(p.error, 400)) };
  const r = p.result;
  if (r && Array.isArray(r.content)) {
    const t = r.content.map((c) => (c?.type === "text" ? c.text : placeholder(c))).join("\n");
    return { err: !!r.isError, text: short(t, 2000) };
  }
  return { err: false, text: json(r, 2000) };
}

function renderResponse(env, ev) {
  // The feed pairs an answer with its request: the first from an addressee
  // (anyone, for a request to everyone).
  const req = ev?.request ? requests.get(ev.request) : null;
  const p = env.payload || {};
  if (req) {
    const r = resultText(p);
    req.el.querySelector(".answers").append(h("div", { class: "response" + (r.err ? " err" : ""), "data-id": env.id },
      "↳ ", short(env.from, 60), " → ", short(env.to?.join(", ") || "", 60), ": ", h("span", { class: "result" }, r.text), richContent(p.result)));
    return null;
  }
  const target = st.byId.get(env.correlation_id?.[0]);
  if (target?.kind === "mcp/request" && (target.payload?.method === "tools/list" || target.payload?.method === "initialize")) return null;
  const r = resultText(p);
  return h("div", { class: "response" + (r.err ? " err" : "") }, who(env), ": ", r.text, richContent(p.result));
}

// followReasoning folds env's reasoning events, as feed.js reads them, into
// the thinking lines: a reasoning belongs to whoever opened it, and ends at
// its conclusion, its reasoner's cancel, the chat that answers it, or its
// reasoner leaving. It returns the line a reasoning opened by env starts.
function followReasoning(env, evs) {
  const p = env.payload || {};
  let el = null;
  for (const e of evs) {
    const t = thinking.get(e.reasoning);
    if (e.type === "reasoning_started") {
      const line = h("div", { class: "thinking-line" });
      const thoughts = h("ol", { class: "thoughts", hidden: true });
      el = h("div", { class: "thinking" }, line, thoughts);
      line.addEventListener("click", () => { thoughts.hidden = !thoughts.hidden; });
      const nt = { el, line, thoughts, from: e.from, n: 0, started: Date.now(), ended: 0, last: "", cancel: false };
      thinking.set(e.reasoning, nt);
      while (thinking.size > 256) thinking.delete(thinking.keys().next().value);
      drawThinking(nt);
    } else if (e.type === "reasoning_step" && e.thought && t) {
      t.n = e.thoughts;
      t.last = thoughtAction(p) || t.last;
      t.thoughts.append(h("li", null, short(p.message || p.reasoning || json(p), 600)));
      while (t.thoughts.childElementCount > 50) t.thoughts.firstElementChild.remove();
      drawThinking(t);
    } else if (e.type === "reasoning_ended" && t) {
      t.ended = Date.now();
      t.cancel = !!e.cancelled;
      drawThinking(t);
    }
  }
  // A conclusion says what was concluded, also after the answer ended the
  // line; only its reasoner's.
  const t = thinking.get(env.context);
  if (env.kind === "reasoning/conclusion" && t && t.from === env.from && p.message && !t.concluded) {
    t.concluded = true;
    t.thoughts.append(h("li", { class: "conclusion" }, short(p.message, 600)));
  }
  return el;
}

// thoughtAction says what a thought does: the tools it calls (from
// actionInput, as the agent sends them) or its action; "" for an answer,
// so that the line keeps the last call.
function thoughtAction(p) {
  const input = p.actionInput ?? p.action_input;
  const names = Array.isArray(input) ? input.map((c) => c?.name).filter((n) => typeof n === "string") : [];
  if (names.length) return "calling " + short(names.join(", "), 60);
  if (p.action === "respond" || p.action === "tool_call") return "";
  return typeof p.action === "string" ? short(p.action, 60) : "";
}

function drawThinking(t) {
  const secs = (((t.ended || Date.now()) - t.started) / 1000).toFixed(1);
  const verb = t.ended ? (t.cancel ? " stopped thinking" : " thought") : " is thinking";
  t.line.textContent = "";
  add(t.line, [h("span", { class: "from", "data-hue": hue(t.from) }, short(t.from, 60)), verb, " · ", t.n + " thought" + (t.n === 1 ? "" : "s"), " · ", secs + " s", t.last ? " · " + t.last : "", " ▾"]);
  t.el.classList.toggle("live", !t.ended);
}

function onFrame(data) {
  const i = data.indexOf("#", 1);
  if (i < 0) return;
  const id = data.slice(1, i);
  let s = st.streams.get(id);
  if (!s) { s = { id, owner: "", frames: 0, bytes: 0, last: "" }; st.streams.set(id, s); }
  s.frames++;
  s.bytes += data.length - i - 1;
  s.last = short(data.slice(i + 1), 80);
  drawStreams();
}

// --- compose ---

function sendLine() {
  const input = $("#compose-input");
  const line = input.value.trim();
  if (!line || !conn) return;
  input.value = "";
  $("#complete").hidden = true;
  if (line.startsWith("{")) {
    // A line that looks like an envelope is sent as one, or not at all:
    // malformed JSON is the person's mistake to see, not a chat to send.
    let env;
    try { env = JSON.parse(line); } catch (e) { composeError("not sent: the line starts with { but is not JSON (" + short(String(e.message || e), 80) + ")", line); return; }
    if (env && typeof env === "object" && typeof env.kind === "string") { conn.send(env); return; }
    composeError("not sent: an envelope needs a kind", line);
    return;
  }
  const to = [];
  let text = line;
  for (let m; (m = /^@([A-Za-z0-9_.:-]+)\s*/.exec(text)); text = text.slice(m[0].length)) to.push(m[1]);
  // No @mention: the space's default recipients for chat, as the terminal
  // clients use them (GET /console/me).
  if (!to.length && Array.isArray(st.defaultTo?.chat)) to.push(...st.defaultTo.chat);
  conn.send({ kind: "chat", to, payload: { text } });
}

// composeError shows why a line was not sent and gives it back to edit.
function composeError(msg, line) {
  const input = $("#compose-input");
  input.value = line;
  let el = $("#compose-error");
  if (!el) {
    el = h("p", { id: "compose-error", class: "error" });
    input.parentElement.append(el);
  }
  el.textContent = msg;
  setTimeout(() => { if (el.textContent === msg) el.textContent = ""; }, 6000);
}

function complete() {
  const input = $("#compose-input");
  const box = $("#complete");
  const before = input.value.slice(0, input.selectionStart);
  const m = /(^|\s)@([A-Za-z0-9_.:-]*)$/.exec(before);
  if (!m) { box.hidden = true; return; }
  const ids = [...st.participants.keys()].filter((id) => id !== st.me && id.startsWith(m[2])).slice(0, 8);
  clear(box);
  if (!ids.length) { box.hidden = true; return; }
  ids.forEach((id, i) => box.append(h("div", { class: "opt" + (i === 0 ? " sel" : ""), "data-id": id, onmousedown: (e) => { e.preventDefault(); pick(id); } }, "@" + id)));
  box.hidden = false;
}

function pick(id) {
  const input = $("#compose-input");
  const pos = input.selectionStart;
  const before = input.value.slice(0, pos).replace(/@([A-Za-z0-9_.:-]*)$/, "@" + id + " ");
  input.value = before + input.value.slice(pos);
  input.setSelectionRange(before.length, before.length);
  $("#complete").hidden = true;
  input.focus();
}

function completeKey(e) {
  const box = $("#complete");
  if (box.hidden) return;
  const opts = [...box.children];
  const i = opts.findIndex((o) => o.classList.contains("sel"));
  if (e.key === "ArrowDown" || e.key === "ArrowUp") {
    e.preventDefault();
    opts[i]?.classList.remove("sel");
    opts[(i + (e.key === "ArrowDown" ? 1 : opts.length - 1)) % opts.length].classList.add("sel");
  } else if (e.key === "Tab" || (e.key === "Enter" && i >= 0)) {
    e.preventDefault();
    pick(opts[Math.max(i, 0)].dataset.id);
  } else if (e.key === "Escape") {
    box.hidden = true;
  }
}

// --- side panels ---

function drawParticipants() {
  const box = clear($("#participants"));
  for (const p of [...st.participants.values()].sort((a, b) => a.id.localeCompare(b.id))) {
    const controls = p.id === st.me ? [] : CONTROLS.filter(([kind]) => allows(st.caps, kind) && (!CONTEXT_CONTROLS.has(kind) || hasContext(p)));
    const timeout = h("input", { class: "pause-timeout", type: "number", min: "1", max: "86400", value: "300", title: "pause timeout, seconds" });
    const status = p.status ? [p.status.status, p.status.messages_in_context !== undefined ? p.status.messages_in_context + " msgs" : "", p.status.tokens ? p.status.tokens + " tokens" : ""].filter(Boolean).join(" · ") : "";
    box.append(h("div", { class: "participant", "data-id": p.id },
      h("div", null, h("span", { class: "dot" + (p.connected ? " on" : "") }), " ", h("strong", null, short(p.id, 60)), p.id === st.me ? " (me)" : "",
        status ? h("span", { class: "dim" }, " · " + short(status, 80)) : ""),
      h("details", null, h("summary", null, (p.capabilities?.length || 0) + " capabilities"),
        h("ul", { class: "caps" }, (p.capabilities || []).slice(0, 100).map((c) => h("li", null, json(c, 200))))),
      controls.length ? h("div", { class: "controls" }, controls.map(([kind, label]) => {
        const b = h("button", { type: "button", "data-kind": kind, onclick: () => control(p.id, kind, timeout) }, label);
        return kind === "participant/pause" ? [b, timeout] : b;
      })) : ""));
  }
}

function control(id, kind, timeout) {
  const payload = {};
  if (kind === "participant/pause") {
    const n = Math.round(Number(timeout.value));
    if (n > 0) payload.timeout_seconds = Math.min(n, 86400);
    payload.reason = "paused from the web console";
  }
  if (kind === "participant/shutdown" && !confirm("Shut " + id + " down?")) return;
  conn.send({ kind, to: [id], payload });
}

async function refreshGrants() {
  if (!conn) return;
  const box = $("#grants");
  let body;
  try { body = await conn.api("GET", "/console/grants"); } catch (e) { box.replaceChildren(h("p", { class: "error" }, String(e.message || e))); return; }
  const grants = Array.isArray(body?.grants) ? body.grants : [];
  clear(box);
  if (!grants.length) { box.append(h("p", { class: "dim" }, "no grants in force")); return; }
  const mayRevoke = allows(st.caps, "capability/revoke");
  box.append(h("table", null, h("tr", null, h("th", null, "to"), h("th", null, "what"), h("th", null, "from"), h("th", null, "lasts"), h("th")),
    grants.map((g) => h("tr", { class: "grant", "data-id": g.id },
      h("td", null, short(g.to, 40)), h("td", null, json(g.capabilities, 200)), h("td", null, short(g.from, 40)),
      h("td", null, g.expires_at ? "until " + new Date(g.expires_at).toLocaleTimeString() : g.session ? "for the granter's session" : "until revoked"),
      h("td", null, mayRevoke || g.from === st.me ? h("button", { type: "button", class: "revoke", onclick: () => revoke(g) }, "Revoke") : "")))));
}

function revoke(g) {
  conn.send({ kind: "capability/revoke", to: [g.to], payload: { recipient: g.to, grant_id: g.id, reason: "revoked in the web console" } });
  approvals.forget(g.id);
}

function drawStreams() {
  const box = clear($("#streams"));
  if (!st.streams.size) { box.append(h("p", { class: "dim" }, "no streams")); return; }
  for (const s of st.streams.values()) {
    box.append(h("div", { class: "stream" + (s.closed ? " closed" : ""), "data-id": s.id },
      h("strong", null, short(s.id, 40)), s.owner ? " · " + short(s.owner, 40) : "", " · ", s.frames + " frames · " + s.bytes + " bytes",
      s.closed ? " · closed" : "", s.last ? h("div", { class: "dim mono" }, s.last) : ""));
  }
}

// showChain draws id's chain from the envelopes the page has seen, then
// asks the gateway's audit log for its lineage and, when the gateway keeps
// one, redraws with the log's steps merged in, each marked by its source.
async function showChain(id) {
  const box = $("#chain-svg");
  const local = st.chain(id);
  const source = h("p", { id: "chain-source", class: "dim" }, "asking the gateway's audit log…");
  clear(box).append(source, drawChain(local, id, (e) => st.parents(e)));
  $("#chain").hidden = false;
  box.dataset.for = id;
  let body;
  try {
    body = await conn.api("GET", "/console/lineage/" + encodeURIComponent(id));
  } catch (e) {
    if (box.dataset.for !== id) return;
    // 429: the gateway bounds lineage requests (per participant and in
    // flight); asking again in a moment works.
    source.textContent = "computed by this page from the envelopes it has seen" +
      (e.code === "no_audit_log" ? ": the gateway keeps no audit log"
        : e.status === 429 ? ": the gateway is answering too many lineage requests; open the chain again in a moment for the audit log's steps"
          : " (the audit log answered: " + short(e.message, 120) + ")");
    source.dataset.source = "page";
    return;
  }
  if (box.dataset.for !== id) return; // another chain was asked for meanwhile
  const { steps, parents } = lineageSteps(body?.lineage);
  const merged = new Map(local.map((e) => [e.id, e]));
  for (const [sid, l] of steps) {
    if (!merged.has(sid)) merged.set(sid, st.byId.get(sid) || { id: sid, kind: l.kind, from: l.from, ts: l.ts, _log: l.text });
  }
  const when = (e) => Date.parse(e.ts) || e._t || 0;
  const envs = [...merged.values()].sort((a, b) => when(a) - when(b));
  const parentsOf = (e) => [...new Set([...(e._log ? [] : st.parents(e)), ...(parents.get(e.id) || [])])];
  const fromLog = envs.filter((e) => steps.has(e.id)).length;
  const logOnly = envs.filter((e) => e._log).length;
  source.textContent = fromLog + " of " + envs.length + " steps from the gateway's audit log" +
    (logOnly ? " (" + logOnly + " this page never saw)" : "") + (envs.length > fromLog ? "; the others only from this page" : "");
  source.dataset.source = "log";
  clear(box).append(source, drawChain(envs, id, parentsOf, steps));
}

function tick() {
  for (const t of thinking.values()) if (!t.ended) drawThinking(t);
  drawMap(clear($("#map")), st);
}

addEventListener("pagehide", () => approvals?.endSession());
// A link opened in a tab that already shows the console changes only the
// fragment: start over, so that its code is exchanged and removed.
addEventListener("hashchange", () => { if (new URLSearchParams(location.hash.slice(1)).has("code")) location.reload(); });
boot();
