// The pictures: a correlation chain, and who sends to whom.
import { s, h, short } from "./dom.js";

// step names what an envelope is in a chain.
function step(env) {
  const p = env.payload || {};
  switch (env.kind) {
    case "chat": return "question or answer: " + short(p.text, 50);
    case "reasoning/start": return "starts reasoning";
    case "reasoning/thought": return "thought: " + short(p.message || p.reasoning || p.action, 44);
    case "reasoning/conclusion": return "concludes";
    case "reasoning/cancel": return "cancels reasoning";
    case "mcp/proposal": return "proposal: " + short(p.params?.name || p.method, 40);
    case "capability/grant": return "grant to " + short(p.recipient, 30) + (p.ttl_seconds ? " for " + p.ttl_seconds + " s" : "");
    case "capability/revoke": return "revoke of " + short(p.recipient, 30);
    case "mcp/request": return "tool call: " + short(p.params?.name || p.method, 40);
    case "mcp/response": return p.error ? "error: " + short(p.error.message, 40) : "response";
    case "mcp/reject": return "rejection: " + short(p.reason, 30);
    case "mcp/withdraw": return "withdrawal";
    default: return env.kind;
  }
}

// drawChain draws envs (a chain, oldest first) as a column of steps, with
// an edge from each to the envelopes parentsOf says it follows. With log (a
// map from ids to the audit log's steps), each step says where it came
// from: the gateway's log, or only the page's own envelopes; a step the
// page never saw is an object {id, kind, from, _log} without payload.
export function drawChain(envs, focus, parentsOf, log) {
  if (!envs.length) return h("p", { class: "dim" }, "this envelope is no longer kept");
  const W = 620, ROW = 56, BOX = 40, X = 150;
  const H = envs.length * ROW + 16;
  const svg = s("svg", { class: "chain", viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": "correlation chain" });
  const y = new Map(envs.map((e, i) => [e.id, 8 + i * ROW]));
  const depth = new Map();
  for (const e of envs) {
    const ps = parentsOf(e).filter((p) => y.has(p));
    depth.set(e.id, ps.length ? Math.min(4, Math.max(...ps.map((p) => depth.get(p) ?? 0)) + 1) : 0);
    for (const p of ps) {
      const x1 = X + depth.get(p) * 24, y1 = y.get(p) + BOX, x2 = X + depth.get(e.id) * 24, y2 = y.get(e.id);
      svg.append(s("path", { class: "edge", d: `M${x1 + 8} ${y1} C ${x1 + 8} ${y1 + 12}, ${x2 + 8} ${y2 - 12}, ${x2 + 8} ${y2}` }));
    }
  }
  for (const e of envs) {
    const x = X + depth.get(e.id) * 24;
    const l = log?.get(e.id);
    const source = !log ? "" : l ? (e._log ? "log only" : "log") : "page";
    const g = s("g", { class: "node" + (e.id === focus ? " focus" : "") + (source ? " from-" + source.replace(" ", "-") : "") + (l?.inferred ? " inferred" : ""),
      "data-id": e.id, "data-kind": e.kind, "data-source": source || undefined });
    g.append(
      s("title", null, source === "page" ? "seen by this page; not in the gateway's audit log" : source ? "in the gateway's audit log" + (e._log ? " (this page never saw it)" : "") + (l.inferred ? "; the reasoning is inferred, not named by context" : "") : ""),
      s("text", { class: "actor", x: 8, y: y.get(e.id) + 25 }, short(e.from, 20)),
      s("rect", { x, y: y.get(e.id), width: W - x - 8, height: BOX, rx: 6 }),
      s("text", { class: "kind", x: x + 10, y: y.get(e.id) + 16 }, e.kind),
      s("text", { class: "label", x: x + 10, y: y.get(e.id) + 32 }, short(e._log ? logLabel(e._log) : step(e), 64)),
      source ? s("text", { class: "source", x: W - 14, y: y.get(e.id) + 16, "text-anchor": "end" }, source + (l?.inferred ? " · inferred" : "")) : "",
    );
    svg.append(g);
  }
  return svg;
}

// logLabel is the log's description of a step the page never saw: its
// text after "kind id from x to y: ".
function logLabel(text) {
  const i = text.indexOf(": ");
  return i >= 0 ? text.slice(i + 2) : text;
}

// drawMap draws the participants on a circle and an arrow for every pair
// that exchanged envelopes in the last minute, as wide as how many.
export function drawMap(box, st) {
  const ids = [...st.participants.keys()].sort();
  const W = 300, H = 240, R = 88, cx = W / 2, cy = H / 2;
  const svg = s("svg", { class: "map", viewBox: `0 0 ${W} ${H}`, width: W, height: H, role: "img", "aria-label": "participants map" });
  const pos = new Map(ids.map((id, i) => {
    const a = (2 * Math.PI * i) / Math.max(ids.length, 1) - Math.PI / 2;
    return [id, [cx + R * Math.cos(a), cy + R * Math.sin(a)]];
  }));
  pos.set("*", [cx, cy]); // everyone: broadcasts
  const counts = new Map();
  for (const t of st.recentTraffic()) {
    for (const to of t.to.length ? t.to : ["*"]) {
      const k = t.from + "\u0000" + to;
      counts.set(k, (counts.get(k) || 0) + 1);
    }
  }
  svg.append(s("defs", null, s("marker", { id: "arrow", viewBox: "0 0 10 10", refX: 9, refY: 5, markerWidth: 6, markerHeight: 6, orient: "auto" },
    s("path", { d: "M0 0 L10 5 L0 10 z", class: "arrowhead" }))));
  for (const [k, n] of counts) {
    const [from, to] = k.split("\u0000");
    const a = pos.get(from), b = pos.get(to);
    if (!a || !b || from === to) continue;
    const dx = b[0] - a[0], dy = b[1] - a[1], len = Math.hypot(dx, dy) || 1;
    const ex = b[0] - (dx / len) * 14, ey = b[1] - (dy / len) * 14;
    svg.append(s("line", { class: "flow", "data-from": from, "data-to": to, "data-count": n, x1: a[0], y1: a[1], x2: ex, y2: ey,
      "stroke-width": Math.min(1 + Math.log2(n + 1), 8), "marker-end": "url(#arrow)" },
    s("title", null, `${from} → ${to === "*" ? "everyone" : to}: ${n} in the last minute`)));
  }
  svg.append(s("circle", { class: "all", cx, cy, r: 5 }, s("title", null, "everyone (broadcasts)")));
  for (const id of ids) {
    const [x, y] = pos.get(id);
    const p = st.participants.get(id);
    svg.append(s("g", { class: "who" + (p.connected ? " on" : "") + (id === st.me ? " me" : ""), "data-id": id },
      s("circle", { cx: x, cy: y, r: 10 }), s("text", { x, y: y + 24, "text-anchor": "middle" }, short(id, 16))));
  }
  box.append(svg);
}
