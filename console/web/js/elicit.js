// Elicitations (docs/bridge.md): a bridged server asks for input during a
// call, and the bridge asks the space with an elicitation/request
// addressed to the caller. Each is a card in the stream; a participant
// whose capabilities allow elicitation/response to that bridge gets a form
// from the requested schema (or the link of a URL elicitation) with
// Accept, Decline and Cancel, and answers with the envelope the SDK sends.
// The bridge closes it with elicitation/done, or refuses an answer with
// elicitation/refused; only the bridge that asked is listened to.
import { h, short } from "./dom.js";
import { allowsTo } from "./caps.js";

// Bounds of what a peer's schema may make the page draw.
const MAX_SCHEMA = 64 * 1024;
const MAX_FIELDS = 32;
const MAX_OPTIONS = 64;
const MAX_KEPT = 256; // cards followed at once; the oldest is let go

// readForm reads a requested schema as fields, or says why it cannot be a
// form: MCP allows a flat object of strings, numbers, integers, booleans
// and enums of strings, and nothing else is drawn.
export function readForm(schema) {
  if (schema === undefined || schema === null) return { fields: [] };
  let size = 0;
  try { size = JSON.stringify(schema).length; } catch { return { bad: "the form's schema cannot be read" }; }
  if (size > MAX_SCHEMA) return { bad: "the form's schema is too large (" + size + " bytes)" };
  if (typeof schema !== "object" || Array.isArray(schema)) return { bad: "the form's schema is not a JSON Schema object" };
  if (schema.type !== undefined && schema.type !== "object") return { bad: "the form's schema is not of type object" };
  const props = schema.properties && typeof schema.properties === "object" && !Array.isArray(schema.properties) ? schema.properties : {};
  const names = Object.keys(props);
  if (names.length > MAX_FIELDS) return { bad: "the form has " + names.length + " fields; at most " + MAX_FIELDS + " are shown here" };
  const required = Array.isArray(schema.required) ? schema.required : [];
  const fields = [];
  for (const name of names) {
    const p = props[name];
    const quoted = JSON.stringify(short(name, 60));
    if (!p || typeof p !== "object" || Array.isArray(p)) return { bad: "field " + quoted + " is not a schema MCP allows in a form" };
    if (p.type !== undefined && typeof p.type !== "string") return { bad: "field " + quoted + " has a type that is not one word" };
    const f = { name, label: short(p.title || name, 60), desc: short(p.description || "", 160), required: required.includes(name), p };
    if (Array.isArray(p.enum) || Array.isArray(p.oneOf)) {
      if (p.type !== undefined && p.type !== "string") return { bad: "field " + quoted + " is an enum of " + JSON.stringify(short(p.type, 20)) + "; forms have enums of strings" };
      const opts = [];
      for (const [i, v] of (p.enum || []).entries()) opts.push({ value: v, title: Array.isArray(p.enumNames) && typeof p.enumNames[i] === "string" ? p.enumNames[i] : v });
      for (const o of p.oneOf || []) opts.push({ value: o?.const, title: typeof o?.title === "string" ? o.title : o?.const });
      if (opts.length > MAX_OPTIONS) return { bad: "field " + quoted + " has " + opts.length + " options; at most " + MAX_OPTIONS + " are shown here" };
      if (opts.some((o) => typeof o.value !== "string")) return { bad: "field " + quoted + " has an option that is not a string" };
      f.kind = "enum";
      f.options = opts.map((o) => ({ value: o.value, title: short(o.title, 60) }));
    } else if (["string", "number", "integer", "boolean"].includes(p.type)) {
      f.kind = p.type;
    } else {
      return { bad: "field " + quoted + " has type " + JSON.stringify(short(String(p.type), 20)) + ", which a form cannot hold" };
    }
    fields.push(f);
  }
  return { fields };
}

// checkField reads a field's input: {value} to send, {} for none, or
// {err} saying why it cannot be sent.
function checkField(f, el) {
  const p = f.p;
  if (f.kind === "boolean") return el.dataset.set ? { value: el.checked } : f.required ? { err: "required" } : {};
  const raw = el.value.trim();
  if (raw === "") return f.required ? { err: "required" } : {};
  if (f.kind === "enum") return { value: raw };
  if (f.kind === "number" || f.kind === "integer") {
    const x = Number(raw);
    if (!Number.isFinite(x)) return { err: "not a number" };
    if (f.kind === "integer" && !Number.isInteger(x)) return { err: "not a whole number" };
    if (typeof p.minimum === "number" && x < p.minimum) return { err: "at least " + p.minimum };
    if (typeof p.maximum === "number" && x > p.maximum) return { err: "at most " + p.maximum };
    return { value: x };
  }
  const n = [...raw].length;
  if (typeof p.minLength === "number" && n < p.minLength) return { err: "at least " + p.minLength + " characters" };
  if (typeof p.maxLength === "number" && n > p.maxLength) return { err: "at most " + p.maxLength + " characters" };
  return { value: raw };
}

// input builds a field's control, with its default.
function input(f) {
  const p = f.p;
  const id = "el-" + Math.random().toString(36).slice(2);
  let el;
  if (f.kind === "enum") {
    el = h("select", { name: f.name, id }, h("option", { value: "" }, "(choose)"), f.options.map((o) => h("option", { value: o.value }, o.title)));
    if (typeof p.default === "string") el.value = p.default;
  } else if (f.kind === "boolean") {
    el = h("input", { type: "checkbox", name: f.name, id });
    if (typeof p.default === "boolean") { el.checked = p.default; el.dataset.set = "1"; }
    el.addEventListener("change", () => { el.dataset.set = "1"; });
  } else {
    const type = f.kind === "string" ? (["email", "uri", "date"].includes(p.format) ? { email: "email", uri: "url", date: "date" }[p.format] : "text") : "number";
    el = h("input", { type, name: f.name, id, step: f.kind === "integer" ? "1" : f.kind === "number" ? "any" : undefined, autocomplete: "off" });
    if (p.default !== undefined && p.default !== null && typeof p.default !== "object") el.value = String(p.default);
  }
  return { id, el };
}

export class Elicitations {
  constructor({ st, conn }) {
    this.st = st;
    this.conn = conn;
    this.open = new Map(); // elicitation id -> {env, el, form, state, answerId, settled}
  }

  // render is the stream's card of an elicitation/request.
  render(env) {
    const p = env.payload && typeof env.payload === "object" ? env.payload : {};
    const to = Array.isArray(env.to) ? env.to : [];
    const me = this.st.me;
    const e = { env, settled: false, answerId: "" };
    this.open.set(env.id, e);
    if (this.open.size > MAX_KEPT) this.open.delete(this.open.keys().next().value);
    const whom = to.length ? to.map((x) => (x === me ? "you" : short(x, 60))).join(", ") : "everyone";
    e.state = h("div", { class: "state" });
    e.note = h("div", { class: "elicit-note error" });
    const call = (env.correlation_id || []).map((id) => this.st.byId.get(id)).find((r) => r?.kind === "mcp/request" && (r.to || []).includes(env.from));
    const mayAnswer = env.from !== me && allowsTo(this.st.caps, "elicitation/response", [env.from], { action: "decline" });
    const forMe = to.includes(me);
    e.el = h("div", { class: "elicit-card", "data-elicitation": env.id },
      h("div", { class: "head" }, h("strong", null, short(env.from, 60)), " asks " + whom,
        typeof p.name === "string" && p.name ? " (for " + short(p.name, 80) + ")" : "", ": ",
        h("span", { class: "msg" }, short(p.message, 1000))),
      call ? "" : h("div", { class: "warn" }, "⚠ this names no call to " + short(env.from, 60) + " seen here; answer only if you expect it"));
    if (p.mode === "url") {
      e.el.append(this.link(p, forMe));
      e.form = { bad: "" };
    } else if (p.mode === "form" || p.mode === undefined) {
      e.form = readForm(p.requestedSchema);
    } else {
      e.form = { bad: "it asks in mode " + JSON.stringify(short(String(p.mode), 20)) + ", which this page does not know" };
    }
    if (mayAnswer) {
      e.el.append(this.controls(e, p, forMe));
      this.setState(e, "awaiting your answer");
    } else {
      if (e.form.bad) e.el.append(h("div", { class: "error" }, "This form cannot be filled here: " + e.form.bad));
      this.setState(e, "awaiting an answer");
    }
    e.el.append(e.note, e.state);
    return e.el;
  }

  // link shows a URL elicitation's link: its host, and for the person it
  // is addressed to a link to follow (http and https only).
  link(p, forMe) {
    let u = null;
    try { u = new URL(String(p.url)); } catch { u = null; }
    const web = u && (u.protocol === "https:" || u.protocol === "http:");
    return h("div", { class: "elicit-link" },
      forMe && web ? h("a", { href: u.href, target: "_blank", rel: "noopener noreferrer" }, short(p.url, 600)) : h("code", null, short(p.url, 600)),
      u ? h("span", { class: "dim" }, " · goes to " + short(u.host || u.protocol, 100)) : "",
      !forMe ? h("span", { class: "dim" }, " · for the person it is addressed to to open") : "");
  }

  // controls are the form and the buttons.
  controls(e, p, forMe) {
    const box = h("form", { class: "elicit-form", novalidate: true, autocomplete: "off", onsubmit: (ev) => { ev.preventDefault(); this.accept(e); } });
    e.inputs = [];
    if (e.form.bad) {
      box.append(h("div", { class: "error" }, "This form cannot be filled here: " + e.form.bad));
    } else {
      for (const f of e.form.fields || []) {
        const { id, el } = input(f);
        const err = h("span", { class: "field-err" });
        e.inputs.push({ f, el, err });
        box.append(h("div", { class: "field", "data-field": f.name },
          h("label", { for: id }, f.label, f.required ? h("span", { class: "req", title: "required" }, " *") : ""), " ", el, " ", err,
          f.desc ? h("div", { class: "dim" }, f.desc) : ""));
      }
    }
    const url = p.mode === "url";
    box.append(h("div", { class: "buttons" },
      url && forMe ? h("button", { type: "button", class: "el-open", onclick: () => this.openLink(e, p) }, "Open and accept") : "",
      h("button", { type: "submit", class: "el-accept", disabled: !!e.form.bad }, "Accept"),
      h("button", { type: "button", class: "el-decline", onclick: () => this.send(e, "decline") }, "Decline"),
      h("button", { type: "button", class: "el-cancel", onclick: () => this.send(e, "cancel") }, "Cancel")));
    e.box = box;
    return box;
  }

  openLink(e, p) {
    let u;
    try { u = new URL(String(p.url)); } catch { return; }
    if (u.protocol !== "https:" && u.protocol !== "http:") return;
    window.open(u.href, "_blank", "noopener,noreferrer");
    this.send(e, "accept");
  }

  // accept sends the filled form once every field is right; a wrong one
  // says why beside it.
  accept(e) {
    if (e.form.bad) return;
    if (e.env.payload?.mode === "url") { this.send(e, "accept"); return; }
    const content = {};
    let ok = true;
    for (const { f, el, err } of e.inputs) {
      const r = checkField(f, el);
      err.textContent = r.err || "";
      if (r.err) { if (ok) el.focus(); ok = false; } else if (r.value !== undefined) content[f.name] = r.value;
    }
    if (ok) this.send(e, "accept", content);
  }

  send(e, action, content) {
    const payload = { action };
    if (content !== undefined) payload.content = content;
    const env = this.conn.send({ kind: "elicitation/response", to: [e.env.from], correlation_id: [e.env.id], payload });
    e.answerId = env?.id || "";
    e.note.textContent = "";
    this.enable(e, false);
    this.setState(e, "answering…");
  }

  enable(e, on) {
    for (const b of e.box?.querySelectorAll("button, input, select") || []) b.disabled = !on || (b.classList.contains("el-accept") && !!e.form.bad);
  }

  setState(e, text) {
    e.state.textContent = text;
    e.el.dataset.state = text;
  }

  // observe follows the bridge's answers: done settles a card, refused
  // gives the form back with the reason; the gateway's refusal of an
  // answer is said too.
  observe(env) {
    if (env.kind === "system/error") {
      for (const e of this.open.values()) {
        if (e.answerId && (env.correlation_id || []).includes(e.answerId) && !e.settled) {
          e.note.textContent = "the gateway refused the answer: " + short(env.payload?.message || env.payload?.error, 200);
          this.setState(e, "awaiting your answer");
          this.enable(e, true);
        }
      }
      return;
    }
    if (env.kind !== "elicitation/done" && env.kind !== "elicitation/refused") return;
    const e = (env.correlation_id || []).map((id) => this.open.get(id)).find(Boolean);
    if (!e || e.settled || e.env.from !== env.from) return; // only the bridge that asked
    const p = env.payload || {};
    if (env.kind === "elicitation/refused") {
      if (!(env.to || []).includes(this.st.me)) return;
      e.note.textContent = "Your answer was not used: " + short(p.reason, 300);
      this.setState(e, "awaiting your answer");
      this.enable(e, true);
      return;
    }
    e.settled = true;
    const who = p.by === this.st.me ? "you" : short(p.by, 60);
    let text;
    if (p.status === "answered") text = ({ accept: "accepted", decline: "declined", cancel: "cancelled" }[p.action] || "answered") + " by " + who;
    else if (p.status === "expired") text = "timed out: " + short(p.reason || "nobody answered in time", 200);
    else text = "cancelled: " + short(p.reason || "the call ended", 200);
    this.setState(e, text);
    e.el.classList.add("settled");
    if (e.box) e.box.remove();
    e.note.textContent = "";
  }
}
