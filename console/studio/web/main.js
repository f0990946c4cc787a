// The studio page: the tools of one definition, edited, checked, tested
// and saved.

import { json, lines, hasSecret } from "./api.js";
import { el, $, debounce, onEdit } from "./dom.js";
import { toNode, toSchema, tokens, TOOL_PROPS, textOf } from "./schema.js";
import { propsEditor } from "./builder.js";
import { TestForm } from "./testform.js";

// state: the tools as the page edits them. A tool is {name, description,
// prompt, params (the root node), rest (keys the page does not edit)}.
const state = { tools: [], current: -1, defOK: false, running: false };

function fromJSON(t) {
  const { name = "", description = "", prompt = "", parameters, ...rest } = t && typeof t === "object" ? t : {};
  return { name, description, prompt, params: toNode(parameters || { type: "object", properties: {} }), rest };
}

function toJSON(t) {
  return { ...t.rest, name: t.name, description: t.description, parameters: toSchema(t.params), prompt: t.prompt };
}

const payload = () => state.tools.map(toJSON);
const tool = () => state.tools[state.current];

function setStatus(text, cls = "") {
  const s = $("#status");
  s.textContent = text;
  s.className = cls;
}

// ---- tool list

function renderList() {
  $("#tools").replaceChildren(...state.tools.map((t, i) =>
    el("li", {}, el("button", { type: "button", class: i === state.current ? "tool current" : "tool", onclick: () => select(i) },
      el("strong", {}, t.name || "(unnamed)"), el("span", { class: "muted" }, t.description.split("\n")[0])))));
}

// SKILL_KEYS are the keys of a tool that describe it as an A2A skill.
const SKILL_KEYS = ["tags", "examples", "inputModes", "outputModes"];

function select(i) {
  state.current = i;
  renderList();
  const t = tool();
  $("#editor").hidden = $("#test").hidden = !t;
  if (!t) return;
  $("#tool-name").value = t.name;
  $("#tool-desc").value = t.description;
  for (const k of SKILL_KEYS) $("#skill-" + k).value = Array.isArray(t.rest[k]) ? t.rest[k].join("\n") : "";
  $("#prompt").value = t.prompt;
  testForm.values.clear();
  propsEditor(t.params, edited, $("#params"), $("#add-param"));
  edited();
}

// ---- the template

function paramNames(t) {
  return t.params.props.map((p) => p.name);
}

function renderTemplate() {
  const t = tool();
  const names = paramNames(t);
  const toks = tokens(t.prompt);
  const used = new Set();
  const issues = [];
  const hl = toks.map((k) => {
    if (k.kind === "ph") {
      used.add(k.name);
      const known = names.includes(k.name) || TOOL_PROPS.includes(k.name);
      if (!known) issues.push({ cls: "error", text: `{${k.name}} names neither a parameter nor a tool property (name, description)` });
      return el("mark", { class: known ? "ph" : "ph unknown", title: known ? "" : "unknown placeholder" }, k.src);
    }
    if (k.kind === "bad") {
      issues.push({ cls: "error", text: k.why });
      return el("mark", { class: "bad" }, k.src);
    }
    if (k.kind === "esc") return el("span", { class: "esc" }, k.src);
    return k.src;
  });
  // A trailing newline needs content after it to take up a line.
  $("#prompt-highlight").replaceChildren(...hl, "\n");
  for (const p of t.params.props) {
    if (!used.has(p.name)) {
      issues.push({ cls: p.required ? "error unused" : "warning unused", text: `the parameter ${p.name} is not used: write {${p.name}} where it belongs` });
    }
  }
  $("#prompt-issues").replaceChildren(...issues.map((i) => el("li", { class: i.cls }, i.text)));
  const ta = $("#prompt");
  ta.style.height = "auto";
  ta.style.height = ta.scrollHeight + 2 + "px";
  renderPreview(toks);
}

// sample is a parameter's value for the preview: the test form's, else its
// first example, else its default.
function sample(p, args) {
  if (args[p.name] !== undefined) return args[p.name];
  const s = toSchema(p.node);
  if (Array.isArray(s.examples) && s.examples.length) return s.examples[0];
  return s.default;
}

function renderPreview(toks) {
  const t = tool();
  const args = testForm.args();
  const parts = toks.map((k) => {
    if (k.kind === "esc") return k.src[0];
    if (k.kind !== "ph") return k.src;
    const p = t.params.props.find((x) => x.name === k.name);
    if (p) {
      const v = sample(p, args);
      return v === undefined ? el("span", { class: "missing" }, k.src) : el("span", { class: "filled" }, textOf(v));
    }
    if (k.name === "name") return t.name;
    if (k.name === "description") return t.description;
    return el("span", { class: "missing" }, k.src);
  });
  $("#preview").replaceChildren(...parts);
}

// ---- checks by the server

const check = debounce(async () => {
  try {
    const r = await json("POST", "/api/check", { tools: payload() });
    state.defOK = r.ok;
    $("#verdict").textContent = r.ok ? "loads" : "does not load";
    $("#verdict").className = r.ok ? "verdict ok" : "verdict bad";
    $("#problems").replaceChildren(...r.problems.map((p) =>
      el("li", { class: p.warning ? "warning" : "error" }, (p.path ? p.path + ": " : "") + p.message)));
    $("#yaml").textContent = r.file || "";
    testNow();
  } catch (e) {
    setStatus(e.message, "bad");
  }
}, 200);

// ---- the test form

const testForm = new TestForm($("#test-form"), () => { renderTemplate(); testNow(); });
let schemaShown = "";

function renderTestForm() {
  const s = JSON.stringify(toSchema(tool().params));
  if (s === schemaShown) return;
  schemaShown = s;
  testForm.render(JSON.parse(s));
}

const testNow = debounce(async () => {
  const t = tool();
  if (!t) return;
  if (!state.defOK) {
    $("#run").disabled = true;
    $("#test-prompt").textContent = "(fix the problems above to test the tool)";
    return;
  }
  try {
    const r = await json("POST", "/api/preview", { tools: payload(), tool: t.name, args: testForm.args() });
    if (r.problems) { state.defOK = false; return; }
    $("#test-prompt").textContent = r.prompt;
    const rest = testForm.showViolations(r.violations);
    $("#test-violations").replaceChildren(...rest.map((v) => el("li", { class: "error" }, (v.path ? v.path + ": " : "") + v.message)));
    $("#test-form").classList.toggle("valid", r.ok);
    $("#run").disabled = !r.ok || state.running;
  } catch (e) {
    setStatus(e.message, "bad");
  }
}, 120);

// ---- running

function stepView(e) {
  const ms = el("span", { class: "ms" }, `${(e.ms / 1000).toFixed(2)} s`);
  const tok = e.tokens && e.tokens.total ? el("span", { class: "tokens" }, `${e.tokens.total} tokens`) : null;
  switch (e.event) {
    case "start":
      return el("div", { class: "step start" }, el("h5", {}, "Prompt", ms), el("pre", {}, e.prompt),
        el("p", { class: "muted" }, `Model: ${e.provider}. Tools offered: ${(e.tools || []).join(", ") || "none"}`));
    case "model":
      return el("div", { class: "step model" }, el("h5", {}, `Model turn ${e.n}`, tok, ms),
        e.text ? el("pre", {}, e.text) : null,
        ...(e.calls || []).map((c) => el("div", { class: "call" }, el("code", {}, c.name), " ", el("code", { class: "args" }, JSON.stringify(c.arguments)))));
    case "tool":
      return el("div", { class: e.failed ? "step tool failed" : "step tool" },
        el("h5", {}, `${e.tool} ${e.failed ? "failed" : "returned"}`, ms),
        el("div", { class: "call" }, "arguments ", el("code", { class: "args" }, JSON.stringify(e.arguments))),
        el("pre", {}, e.text));
    case "result":
      return el("div", { class: "step result", id: "run-result" }, el("h5", {}, `Answer after ${e.steps} model turn(s)`, tok, ms), el("pre", {}, e.text));
    default:
      return el("div", { class: "step error", id: "run-result" }, el("h5", {}, "Failed", ms), el("pre", {}, e.text));
  }
}

async function run() {
  const t = tool();
  state.running = true;
  $("#run").disabled = true;
  const log = $("#run-log");
  const note = el("p", { class: "muted", id: "running" }, `Running ${t.name}…`);
  log.replaceChildren(note);
  try {
    await lines("/api/run", { tools: payload(), tool: t.name, args: testForm.args() }, (e) => log.append(stepView(e)));
  } catch (e) {
    const probs = e.body && e.body.problems ? e.body.problems.map((p) => p.message).join("; ") : e.message;
    log.append(stepView({ event: "error", ms: 0, text: probs }));
  } finally {
    note.remove();
    state.running = false;
    testNow();
  }
}

// ---- editing

function edited() {
  const t = tool();
  if (!t) return;
  renderList();
  renderTestForm();
  renderTemplate();
  $("#verdict").textContent = "checking…";
  $("#verdict").className = "verdict";
  $("#run").disabled = true;
  setStatus("");
  check();
}

onEdit($("#tool-name"), () => { tool().name = $("#tool-name").value; edited(); });
onEdit($("#tool-desc"), () => { tool().description = $("#tool-desc").value; edited(); });
onEdit($("#prompt"), () => { tool().prompt = $("#prompt").value; edited(); });
// The A2A skill's keys live with the keys the page does not otherwise
// edit: one entry per line, none means the key is left out.
for (const k of SKILL_KEYS) {
  onEdit($("#skill-" + k), () => {
    const v = $("#skill-" + k).value.split("\n").map((x) => x.trim()).filter((x) => x !== "");
    if (v.length) tool().rest[k] = v;
    else delete tool().rest[k];
    edited();
  });
}
$("#run").addEventListener("click", run);
$("#new-tool").addEventListener("click", () => {
  let k = 1;
  while (state.tools.some((t) => t.name === "new_tool" + (k > 1 ? k : ""))) k++;
  state.tools.push(fromJSON({ name: "new_tool" + (k > 1 ? k : ""), description: "", prompt: "", parameters: { type: "object", properties: {} } }));
  schemaShown = "";
  select(state.tools.length - 1);
});
$("#delete-tool").addEventListener("click", () => {
  state.tools.splice(state.current, 1);
  schemaShown = "";
  select(Math.min(state.current, state.tools.length - 1));
  check();
});
$("#save").addEventListener("click", async () => {
  setStatus("saving…");
  try {
    const r = await json("POST", "/api/save", { tools: payload() });
    if (r.ok) setStatus("Saved", "ok");
    else setStatus("Not saved: " + r.problems.filter((p) => !p.warning).map((p) => (p.path ? p.path + ": " : "") + p.message).join("; "), "bad");
  } catch (e) {
    setStatus("Not saved: " + e.message, "bad");
  }
});

async function start() {
  if (!hasSecret()) {
    setStatus("Open the URL that `mew agent studio` printed (it carries the secret).", "bad");
    return;
  }
  try {
    const d = await json("GET", "/api/definition");
    $("#file").textContent = d.file;
    $("#servers").replaceChildren(...d.servers.map((s) => el("li", {}, `${s.name} (${s.permission === "never" ? "used in runs" : "needs approval: not used"})`)));
    state.tools = JSON.parse(JSON.stringify(d.tools)).map(fromJSON);
    document.body.dataset.ready = "1";
    select(state.tools.length ? 0 : -1);
  } catch (e) {
    setStatus(e.message, "bad");
  }
}

start();
