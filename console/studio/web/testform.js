// The Test tool form: fields generated from the tool's schema, their
// values read back as the call's arguments.

import { el, onEdit } from "./dom.js";

// controls maps a field's path to its reader; values keep what was typed
// across re-renders, by path.
export class TestForm {
  constructor(form, changed) {
    this.form = form;
    this.changed = changed;
    this.values = new Map();
  }

  // render builds the fields for a root object schema.
  render(schema) {
    this.form.replaceChildren(...this.fields(schema, ""));
  }

  fields(schema, prefix) {
    const req = new Set(Array.isArray(schema.required) ? schema.required : []);
    const out = [];
    for (const [name, s] of Object.entries(schema.properties || {})) {
      const path = prefix ? prefix + "." + name : name;
      out.push(this.field(name, path, s || {}, req.has(name)));
    }
    return out;
  }

  field(name, path, s, required) {
    const label = el("span", { class: "t-label" }, name, required ? el("abbr", { title: "required", class: "req" }, " *") : " (optional)");
    const hint = s.description ? el("span", { class: "muted" }, " — " + s.description) : null;
    const msg = el("span", { class: "t-violation", dataset: { path } });
    if (s.type === "object") {
      return el("fieldset", { class: "t-field", dataset: { path } }, el("legend", {}, label, hint), ...this.fields(s, path), msg);
    }
    let input;
    const kept = this.values.get(path) ?? "";
    if (Array.isArray(s.enum)) {
      input = el("select", {}, el("option", { value: "" }, "(none)"),
        ...s.enum.map((v) => el("option", { value: JSON.stringify(v), selected: kept === JSON.stringify(v) }, typeof v === "string" ? v : JSON.stringify(v))));
    } else if (s.type === "boolean") {
      input = el("select", {}, ...["", "true", "false"].map((v) => el("option", { value: v, selected: kept === v }, v || "(none)")));
    } else if (s.type === "array" && s.items && s.items.type === "string") {
      input = el("textarea", { rows: 2, placeholder: "one item a line", value: kept });
    } else {
      const ph = s.type === "array" ? "a JSON list" : Array.isArray(s.examples) && s.examples.length ? "e.g. " + s.examples[0] : s.default !== undefined ? "default " + JSON.stringify(s.default) : "";
      input = el("input", { value: kept, placeholder: ph, spellcheck: false });
    }
    input.name = path;
    input.dataset.type = s.type || "";
    input.dataset.items = s.items && s.items.type ? s.items.type : "";
    input.dataset.enum = Array.isArray(s.enum) ? "1" : "";
    onEdit(input, () => { this.values.set(path, input.value); this.changed(); });
    return el("label", { class: "t-field", dataset: { path } }, label, hint, input, msg);
  }

  // args reads the fields as arguments: empty fields are left out, text
  // that does not read as its type is sent as text for the schema check
  // to report.
  args() {
    const out = {};
    for (const input of this.form.querySelectorAll("[name]")) {
      const raw = input.value;
      if (raw === "") continue;
      let v;
      const type = input.dataset.type;
      if (input.dataset.enum) v = JSON.parse(raw);
      else if (type === "number" || type === "integer") v = raw.trim() !== "" && !Number.isNaN(Number(raw)) ? Number(raw) : raw;
      else if (type === "boolean") v = raw === "true";
      else if (type === "array" && input.dataset.items === "string") v = raw.split("\n").filter((x) => x !== "");
      else if (type === "array" || type === "object") {
        try { v = JSON.parse(raw); } catch { v = raw; }
      } else v = raw;
      set(out, input.name.split("."), v);
    }
    return out;
  }

  // showViolations puts each violation next to its field; those of no
  // field are returned.
  showViolations(vs) {
    for (const m of this.form.querySelectorAll(".t-violation")) m.textContent = "";
    for (const f of this.form.querySelectorAll(".t-field")) f.classList.remove("invalid");
    const rest = [];
    for (const v of vs) {
      const path = (v.path || "").replace(/\[\d+\]$/, "");
      const f = path ? this.form.querySelector(`.t-field[data-path="${CSS.escape(path)}"]`) : null;
      if (!f) { rest.push(v); continue; }
      f.classList.add("invalid");
      const m = f.querySelector(":scope > .t-violation");
      m.textContent = (m.textContent ? m.textContent + "; " : "") + v.message;
    }
    return rest;
  }
}

function set(obj, keys, v) {
  let o = obj;
  for (const k of keys.slice(0, -1)) o = o[k] ??= {};
  o[keys[keys.length - 1]] = v;
}
