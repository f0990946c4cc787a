// Small DOM helpers: elements are built with properties, never from HTML
// strings, so that text from the file or a run is never markup.

export function el(tag, props = {}, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(props)) {
    if (k === "class") e.className = v;
    else if (k === "dataset") Object.assign(e.dataset, v);
    else if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else if (k in e) e[k] = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined || c === false) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

export const $ = (sel, root = document) => root.querySelector(sel);

// debounce calls fn once the calls stop for ms.
export function debounce(fn, ms) {
  let t;
  return (...args) => {
    clearTimeout(t);
    t = setTimeout(() => fn(...args), ms);
  };
}

// onEdit calls fn on input and change events of e.
export function onEdit(e, fn) {
  e.addEventListener("input", fn);
  e.addEventListener("change", fn);
  return e;
}
