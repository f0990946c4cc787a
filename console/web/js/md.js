// A markdown subset for chat: paragraphs, fenced code, bullet lists,
// headings (as bold lines), `code`, **bold**, *emphasis* and http(s) links.
// It builds DOM nodes from text; peer text never reaches innerHTML.
import { h } from "./dom.js";

const INLINE = /(`[^`\n]+`)|(\*\*[^*\n]+\*\*)|(\*[^*\n]+\*)|\[([^\]\n]+)\]\((https?:\/\/[^)\s]+)\)/g;

function inline(text) {
  const out = [];
  let last = 0;
  for (const m of text.matchAll(INLINE)) {
    if (m.index > last) out.push(text.slice(last, m.index));
    if (m[1]) out.push(h("code", null, m[1].slice(1, -1)));
    else if (m[2]) out.push(h("strong", null, m[2].slice(2, -2)));
    else if (m[3]) out.push(h("em", null, m[3].slice(1, -1)));
    else out.push(h("a", { href: m[5], rel: "noopener noreferrer", target: "_blank" }, m[4]));
    last = m.index + m[0].length;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}

// markdown returns a fragment for text (at most 64 KiB of it).
export function markdown(text) {
  const frag = document.createDocumentFragment();
  const lines = String(text ?? "").slice(0, 65536).split("\n");
  let para = [], list = null, code = null;
  const flush = () => {
    if (para.length) frag.append(h("p", null, inline(para.join("\n"))));
    para = [];
    list = null;
  };
  for (const line of lines) {
    if (code) {
      if (line.startsWith("```")) { frag.append(h("pre", null, h("code", null, code.join("\n")))); code = null; }
      else code.push(line);
      continue;
    }
    if (line.startsWith("```")) { flush(); code = []; continue; }
    const item = /^\s*[-*] (.*)$/.exec(line);
    if (item) {
      if (para.length) flush();
      if (!list) { list = h("ul"); frag.append(list); }
      list.append(h("li", null, inline(item[1])));
      continue;
    }
    const head = /^#{1,6} (.*)$/.exec(line);
    if (head) { flush(); frag.append(h("p", { class: "md-h" }, h("strong", null, inline(head[1])))); continue; }
    if (line.trim() === "") { flush(); continue; }
    list = null;
    para.push(line);
  }
  if (code) frag.append(h("pre", null, h("code", null, code.join("\n"))));
  flush();
  return frag;
}
