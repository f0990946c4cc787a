// DOM helpers. Everything a peer controls goes in as text nodes or
// attribute values; nothing is ever parsed as HTML.

const SVG = "http://www.w3.org/2000/svg";

function build(el, attrs, kids) {
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k.startsWith("on") && typeof v === "function") el.addEventListener(k.slice(2), v);
    else if (k === "class") el.setAttribute("class", v);
    else if (k === "style" && typeof v === "object") Object.assign(el.style, v);
    else if (k === "style") throw new Error("style must be an object");
    else el.setAttribute(k, v === true ? "" : String(v));
  }
  add(el, kids);
  return el;
}

// add appends children: nodes, strings (as text), arrays of them.
export function add(el, kids) {
  for (const k of kids.flat(Infinity)) {
    if (k === null || k === undefined || k === false) continue;
    el.append(k instanceof Node ? k : document.createTextNode(String(k)));
  }
  return el;
}

// h creates an HTML element.
export function h(tag, attrs, ...kids) {
  return build(document.createElement(tag), attrs, kids);
}

// s creates an SVG element.
export function s(tag, attrs, ...kids) {
  return build(document.createElementNS(SVG, tag), attrs, kids);
}

// clear empties an element.
export function clear(el) {
  el.replaceChildren();
  return el;
}

// short cuts a peer's text to n characters for one-line displays.
export function short(text, n = 120) {
  const t = String(text ?? "").replace(/[\u0000-\u001f\u007f]+/g, " ");
  return t.length > n ? t.slice(0, n - 1) + "…" : t;
}

// json renders a value as compact JSON text, cut to n characters.
export function json(v, n = 400) {
  let t;
  try { t = JSON.stringify(v); } catch { t = String(v); }
  return short(t ?? "", n);
}
