// The parameters builder's model, and the prompt template's tokens.
//
// A node is one schema being edited: its type, its keywords as the text
// the person typed (converted on the way out, so that a wrong value
// reaches the loader and is reported instead of vanishing), and for an
// object its properties as an ordered list. Keywords the builder does not
// edit are kept in `extra` and written back as they were.

export const TYPES = ["string", "number", "integer", "boolean", "array", "object"];

const EDITED = new Set(["type", "description", "title", "enum", "default", "examples",
  "minLength", "maxLength", "minimum", "maximum", "minItems", "maxItems", "uniqueItems",
  "items", "properties", "required"]);

// listText shows a list as "a, b" (JSON when an item holds a comma).
function listText(v) {
  if (!Array.isArray(v)) return "";
  if (v.some((x) => typeof x === "string" && x.includes(","))) return JSON.stringify(v);
  return v.map((x) => (typeof x === "string" ? x : JSON.stringify(x))).join(", ");
}

function scalarText(v) {
  if (v === undefined) return "";
  return typeof v === "string" ? v : JSON.stringify(v);
}

// toNode reads a JSON schema into a node.
export function toNode(schema) {
  const s = schema && typeof schema === "object" ? schema : {};
  const n = {
    type: typeof s.type === "string" ? s.type : "string",
    description: s.description ?? "",
    title: s.title ?? "",
    enumText: listText(s.enum),
    defaultText: scalarText(s.default),
    examplesText: listText(s.examples),
    minLength: scalarText(s.minLength), maxLength: scalarText(s.maxLength),
    minimum: scalarText(s.minimum), maximum: scalarText(s.maximum),
    minItems: scalarText(s.minItems), maxItems: scalarText(s.maxItems),
    uniqueItems: s.uniqueItems === true,
    items: null, props: [], extra: {},
  };
  if (s.items && !Array.isArray(s.items)) n.items = toNode(s.items);
  else if (Array.isArray(s.items)) n.extra.items = s.items; // a tuple: kept as written
  if (n.type === "array" && !n.items && !n.extra.items) n.items = toNode({ type: "string" });
  const req = Array.isArray(s.required) ? s.required : [];
  if (s.properties && typeof s.properties === "object") {
    for (const [name, ps] of Object.entries(s.properties)) {
      n.props.push({ name, required: req.includes(name), node: toNode(ps) });
    }
  }
  for (const [k, v] of Object.entries(s)) if (!EDITED.has(k)) n.extra[k] = v;
  return n;
}

// newNode is a fresh node of a type.
export function newNode(type) {
  return toNode({ type });
}

// value reads typed text as the type's value: a number for numeric types
// when it is one, true/false for booleans; anything else stays text.
function value(text, type) {
  const t = text.trim();
  if ((type === "number" || type === "integer") && t !== "" && !Number.isNaN(Number(t))) return Number(t);
  if (type === "boolean" && (t === "true" || t === "false")) return t === "true";
  return type === "string" ? text : t;
}

// list reads "a, b" or a JSON list.
function list(text, type) {
  const t = text.trim();
  if (t === "") return undefined;
  if (t.startsWith("[")) {
    try { return JSON.parse(t); } catch { /* fall through: read as words */ }
  }
  return t.split(",").map((x) => value(x.trim(), type));
}

function count(text) {
  const t = text.trim();
  if (t === "") return undefined;
  return Number.isNaN(Number(t)) ? t : Number(t);
}

// toSchema writes a node as JSON schema.
export function toSchema(n) {
  const s = { type: n.type };
  if (n.title) s.title = n.title;
  if (n.description) s.description = n.description;
  const put = (k, v) => { if (v !== undefined) s[k] = v; };
  switch (n.type) {
    case "string":
    case "number":
    case "integer":
      put("enum", list(n.enumText, n.type));
      if (n.defaultText !== "") s.default = value(n.defaultText, n.type);
      put("examples", list(n.examplesText, n.type));
      if (n.type === "string") {
        put("minLength", count(n.minLength));
        put("maxLength", count(n.maxLength));
      } else {
        put("minimum", count(n.minimum));
        put("maximum", count(n.maximum));
      }
      break;
    case "boolean":
      if (n.defaultText !== "") s.default = value(n.defaultText, "boolean");
      break;
    case "array":
      if (!n.extra.items) s.items = toSchema(n.items || newNode("string"));
      put("minItems", count(n.minItems));
      put("maxItems", count(n.maxItems));
      if (n.uniqueItems) s.uniqueItems = true;
      break;
    case "object": {
      const props = {};
      for (const p of n.props) props[p.name] = toSchema(p.node);
      s.properties = props;
      const req = n.props.filter((p) => p.required).map((p) => p.name);
      if (req.length) s.required = req;
      break;
    }
  }
  for (const [k, v] of Object.entries(n.extra)) {
    if (k === "items" && n.type !== "array") continue;
    s[k] = v;
  }
  return s;
}

const PLAIN = /^[A-Za-z0-9_.-]{1,64}$/;

// tokens splits a template as the loader does: text, {{ and }} (literal
// braces), {name} placeholders, and faulty braces.
export function tokens(src) {
  const out = [];
  let i = 0;
  let text = "";
  const flush = () => { if (text) { out.push({ kind: "text", src: text }); text = ""; } };
  while (i < src.length) {
    const c = src[i];
    if (c === "{" && src[i + 1] === "{") { flush(); out.push({ kind: "esc", src: "{{" }); i += 2; continue; }
    if (c === "}" && src[i + 1] === "}") { flush(); out.push({ kind: "esc", src: "}}" }); i += 2; continue; }
    if (c === "}") { flush(); out.push({ kind: "bad", src: "}", why: "a '}' without '{': write }} for a literal brace" }); i++; continue; }
    if (c === "{") {
      const rest = src.slice(i + 1);
      const j = rest.search(/[{}]/);
      if (j < 0 || rest[j] !== "}") { flush(); out.push({ kind: "bad", src: "{", why: "a '{' that is not closed: write {{ for a literal brace" }); i++; continue; }
      const name = rest.slice(0, j);
      flush();
      if (PLAIN.test(name)) out.push({ kind: "ph", src: "{" + name + "}", name });
      else out.push({ kind: "bad", src: "{" + name + "}", why: `{${name}} is not a placeholder: write {{ and }} for literal braces` });
      i += j + 2;
      continue;
    }
    text += c;
    i++;
  }
  flush();
  return out;
}

// TOOL_PROPS are the tool's own members a prompt may name.
export const TOOL_PROPS = ["name", "description"];

// textOf is how a value appears in a prompt: a string as it is, anything
// else as compact JSON.
export function textOf(v) {
  return typeof v === "string" ? v : JSON.stringify(v);
}
