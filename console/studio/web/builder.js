// The parameters builder: one editor per property, nested for objects and
// array items. Each edit changes the node and calls changed().

import { el, onEdit } from "./dom.js";
import { TYPES, newNode } from "./schema.js";

// field is a labelled input bound to node[key].
function field(node, key, label, changed, attrs = {}) {
  const input = el("input", { value: node[key] ?? "", class: "f-" + key, spellcheck: false, ...attrs });
  onEdit(input, () => { node[key] = input.value; changed(); });
  return el("label", { class: "kw" }, label, input);
}

function typeSelect(node, changed, rerender) {
  const sel = el("select", { class: "p-type" }, ...TYPES.map((t) => el("option", { value: t, selected: t === node.type }, t)));
  sel.addEventListener("change", () => {
    const fresh = newNode(sel.value);
    fresh.description = node.description;
    Object.assign(node, fresh);
    rerender();
    changed();
  });
  return sel;
}

// schemaEditor edits one node: its type and the keywords of that type.
function schemaEditor(node, changed) {
  const box = el("div", { class: "schema" });
  const render = () => {
    box.replaceChildren();
    const head = el("div", { class: "row" }, typeSelect(node, changed, render), field(node, "description", "Description", changed, { class: "p-desc" }));
    box.append(head);
    const kws = el("div", { class: "row kws" });
    switch (node.type) {
      case "string":
        kws.append(
          field(node, "enumText", "Enum", changed, { placeholder: "a, b, c" }),
          field(node, "minLength", "Min length", changed, { size: 4 }),
          field(node, "maxLength", "Max length", changed, { size: 4 }),
          field(node, "defaultText", "Default", changed),
          field(node, "examplesText", "Examples", changed, { placeholder: "a, b" }));
        break;
      case "number":
      case "integer":
        kws.append(
          field(node, "enumText", "Enum", changed, { placeholder: "1, 2, 3" }),
          field(node, "minimum", "Minimum", changed, { size: 6 }),
          field(node, "maximum", "Maximum", changed, { size: 6 }),
          field(node, "defaultText", "Default", changed, { size: 6 }),
          field(node, "examplesText", "Examples", changed));
        break;
      case "boolean": {
        const sel = el("select", { class: "f-defaultText" },
          ...["", "true", "false"].map((v) => el("option", { value: v, selected: node.defaultText === v }, v || "(no default)")));
        onEdit(sel, () => { node.defaultText = sel.value; changed(); });
        kws.append(el("label", { class: "kw" }, "Default", sel));
        break;
      }
      case "array": {
        kws.append(
          field(node, "minItems", "Min items", changed, { size: 4 }),
          field(node, "maxItems", "Max items", changed, { size: 4 }));
        const uniq = el("input", { type: "checkbox", class: "f-uniqueItems", checked: node.uniqueItems });
        onEdit(uniq, () => { node.uniqueItems = uniq.checked; changed(); });
        kws.append(el("label", { class: "kw" }, uniq, "Unique"));
        box.append(kws);
        if (node.extra.items) {
          box.append(el("p", { class: "muted" }, "Items: a tuple, kept as written in the file."));
        } else {
          node.items ||= newNode("string");
          box.append(el("div", { class: "items" }, el("span", { class: "muted" }, "Items:"), schemaEditor(node.items, changed)));
        }
        return;
      }
      case "object":
        box.append(propsEditor(node, changed));
        return;
    }
    box.append(kws);
  };
  render();
  return box;
}

// propsEditor edits an object's properties; it is the root of the
// builder too.
export function propsEditor(node, changed, list = el("div", { class: "props" }), addButton = null) {
  const render = () => {
    list.replaceChildren();
    node.props.forEach((p, i) => {
      const name = el("input", { class: "p-name", value: p.name, placeholder: "name", spellcheck: false, size: 14 });
      onEdit(name, () => { p.name = name.value; changed(); });
      const req = el("input", { type: "checkbox", class: "p-required", checked: p.required });
      onEdit(req, () => { p.required = req.checked; changed(); });
      const del = el("button", { type: "button", class: "p-delete danger", title: "Remove " + p.name, onclick: () => {
        node.props.splice(i, 1);
        render();
        changed();
      } }, "×");
      list.append(el("div", { class: "prop", dataset: { index: String(i) } },
        el("div", { class: "row" }, name, el("label", { class: "kw" }, req, "Required"), del),
        schemaEditor(p.node, changed)));
    });
  };
  const add = () => {
    let k = node.props.length + 1;
    while (node.props.some((p) => p.name === "param" + k)) k++;
    node.props.push({ name: "param" + k, required: false, node: newNode("string") });
    render();
    changed();
  };
  render();
  if (addButton) {
    addButton.onclick = add;
    return list;
  }
  return el("div", { class: "nested" }, list, el("button", { type: "button", class: "p-add", onclick: add }, "+ Add property"));
}
