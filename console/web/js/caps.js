// A reading of capability patterns good enough to decide what the page
// offers (controls, the approval queue). The gateway enforces the real
// rules; a wrong guess here only shows a button the gateway then refuses.

function kindMatches(pat, kind) {
  if (pat === "*" || pat === kind) return true;
  if (pat.endsWith("/*")) return kind.startsWith(pat.slice(0, -1));
  if (pat.endsWith("*")) return kind.startsWith(pat.slice(0, -1));
  return false;
}

function valueMatches(pat, v) {
  if (Array.isArray(pat)) return pat.some((p) => valueMatches(p, v));
  if (pat !== null && typeof pat === "object") {
    if (v === null || typeof v !== "object") return false;
    return Object.entries(pat).every(([k, p]) => valueMatches(p, v[k]));
  }
  if (typeof pat === "string") {
    if (typeof v !== "string") return false;
    if (pat.startsWith("!")) return !valueMatches(pat.slice(1), v);
    if (pat.length >= 2 && pat.startsWith("/") && pat.endsWith("/")) {
      try { return new RegExp(pat.slice(1, -1)).test(v); } catch { return false; }
    }
    if (pat.includes("*")) {
      const re = "^" + pat.split("*").map((x) => x.replace(/[.+?^${}()|[\]\\]/g, "\\$&")).join(".*") + "$";
      return new RegExp(re).test(v);
    }
    return pat === v;
  }
  return pat === v;
}

// allows reports whether caps let one send kind (with payload, when given;
// without one, any payload condition counts as possibly met).
export function allows(caps, kind, payload) {
  for (const c of caps || []) {
    if (!c || typeof c.kind !== "string" || !kindMatches(c.kind, kind)) continue;
    if (!c.payload || payload === undefined || valueMatches(c.payload, payload)) return true;
  }
  return false;
}

// allowsTo is allows for an envelope addressed to to: a capability that
// names recipients (a "to" member) allows it only when every recipient
// matches one of them.
export function allowsTo(caps, kind, to, payload) {
  for (const c of caps || []) {
    if (!c || typeof c.kind !== "string" || !kindMatches(c.kind, kind)) continue;
    if (c.payload && payload !== undefined && !valueMatches(c.payload, payload)) continue;
    if (c.to !== undefined) {
      const pats = Array.isArray(c.to) ? c.to : [c.to];
      if (!to.length || !to.every((r) => pats.some((p) => valueMatches(p, r)))) continue;
    }
    return true;
  }
  return false;
}

// literal is a pattern matching exactly s, as the terminal UI writes it.
export function literal(s) {
  const special = s === "" || /[*?\\]/.test(s) || s.startsWith("!") || (s.length >= 2 && s.startsWith("/") && s.endsWith("/"));
  return special ? "/^" + s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&") + "$/" : s;
}

// exact turns a value into a pattern that matches exactly it; lists cannot
// be matched exactly (the matcher reads them as alternatives).
export function exact(v) {
  if (typeof v === "string") return literal(v);
  if (Array.isArray(v)) throw new Error("arguments holding lists cannot be granted exactly");
  if (v !== null && typeof v === "object") {
    const out = {};
    for (const [k, x] of Object.entries(v)) {
      if (/[*?]/.test(k) || k.startsWith("$")) throw new Error(`the member name ${k} cannot be matched exactly`);
      out[k] = exact(x);
    }
    return out;
  }
  return v;
}

export { valueMatches };
