// Rich content of tool results: images drawn, audio playable, resource
// links and embedded resources described. The data comes from a peer, so
// only well-formed base64 of a few known media types becomes a data: URL
// (the page's CSP allows data: for images and media, nothing else), and a
// link is followable only when it is http(s).
import { h, short } from "./dom.js";

const IMAGE_TYPES = new Set(["image/png", "image/jpeg", "image/gif", "image/webp"]);
const AUDIO_TYPES = new Set(["audio/wav", "audio/x-wav", "audio/mpeg", "audio/ogg", "audio/webm", "audio/mp4"]);
const MAX_DATA = 8 * 1024 * 1024; // base64 characters
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

// byteSize is n bytes as a person reads them, as the terminal UI says it.
export function byteSize(n) {
  if (n < 1000) return n + " B";
  if (n < 1000 * 1000) return (n / 1000).toFixed(1) + " KB";
  return (n / 1000 / 1000).toFixed(1) + " MB";
}

function b64Len(s) {
  return typeof s === "string" ? Math.floor(s.replace(/=+$/, "").length * 3 / 4) : 0;
}

// placeholder is the one-line text of a content item that is not text:
// "[image image/png 1.2 KB]".
export function placeholder(c) {
  const type = short(c?.type, 20);
  switch (c?.type) {
    case "image":
    case "audio":
      return "[" + type + " " + short(c.mimeType || "(no type)", 60) + " " + byteSize(b64Len(c.data)) + "]";
    case "resource_link":
      return "[link " + short(c.uri, 200) + (c.name && c.name !== c.uri ? " (" + short(c.name, 80) + ")" : "") +
        (c.mimeType ? " " + short(c.mimeType, 60) : "") + (Number.isFinite(c.size) && c.size >= 0 ? " " + byteSize(c.size) : "") + "]";
    case "resource": {
      const r = c.resource || {};
      const n = typeof r.text === "string" ? r.text.length : b64Len(r.blob);
      return "[resource " + short(r.uri, 200) + " " + short(r.mimeType || "(no type)", 60) + " " + byteSize(n) + "]";
    }
  }
  return "[" + type + "]";
}

function dataURL(mime, data) {
  if (typeof data !== "string" || data.length > MAX_DATA || !BASE64.test(data)) return "";
  return "data:" + mime + ";base64," + data;
}

// richContent returns the elements that show a result's non-text items,
// or "" when it has none.
export function richContent(result) {
  const items = Array.isArray(result?.content) ? result.content.filter((c) => c && c.type !== "text") : [];
  if (!items.length) return "";
  return h("div", { class: "rich" }, items.slice(0, 20).map((c) => {
    const label = placeholder(c);
    if (c.type === "image" && IMAGE_TYPES.has(c.mimeType)) {
      const src = dataURL(c.mimeType, c.data);
      if (src) return h("figure", { class: "rich-image" }, h("img", { src, alt: label, title: label }), h("figcaption", { class: "dim" }, label));
    }
    if (c.type === "audio" && AUDIO_TYPES.has(c.mimeType)) {
      const src = dataURL(c.mimeType, c.data);
      if (src) return h("div", { class: "rich-audio" }, h("audio", { controls: true, src }), " ", h("span", { class: "dim" }, label));
    }
    if (c.type === "resource_link") {
      let u = null;
      try { u = new URL(String(c.uri)); } catch { u = null; }
      if (u && (u.protocol === "https:" || u.protocol === "http:")) {
        return h("div", { class: "rich-link" }, h("a", { href: u.href, target: "_blank", rel: "noopener noreferrer" }, label));
      }
    }
    if (c.type === "resource" && typeof c.resource?.text === "string") {
      return h("details", { class: "rich-resource" }, h("summary", null, label), h("pre", null, short(c.resource.text, 4000)));
    }
    return h("div", { class: "rich-other dim" }, label);
  }));
}
