// The gateway's lineage of an envelope (GET /console/lineage/{id}, read from
// its audit log), turned into steps and links the chain picture can draw
// beside the page's own.

// CAUSES are the relations whose node explains the one above it (so the
// one above follows from it); the others (result, step) follow from it.
const CAUSES = new Set(["fulfills", "answers", "in_reply_to", "in_reasoning", "grant"]);
const MAX_DEPTH = 40;
const MAX_STEPS = 400;

// lineageSteps walks a lineage tree: steps maps envelope ids to what the
// log says of them, parents maps an id to the ids it follows.
export function lineageSteps(root) {
  const steps = new Map();
  const parents = new Map();
  const link = (child, parent) => {
    if (child === parent) return;
    if (!parents.has(child)) parents.set(child, []);
    if (!parents.get(child).includes(parent)) parents.get(child).push(parent);
  };
  const walk = (n, above, depth) => {
    if (!n || typeof n !== "object" || depth > MAX_DEPTH || steps.size >= MAX_STEPS) return;
    let here = above;
    if (typeof n.id === "string" && n.id && typeof n.kind === "string") {
      if (!steps.has(n.id)) {
        steps.set(n.id, { id: n.id, kind: n.kind, from: String(n.from ?? ""), ts: String(n.time ?? ""), text: String(n.text ?? ""), inferred: false });
      }
      if (n.relation === "in_reasoning" && n.inferred === true) steps.get(n.id).inferred = true;
      if (above) {
        if (CAUSES.has(n.relation)) link(above, n.id);
        else link(n.id, above);
      }
      here = n.id;
    }
    if (Array.isArray(n.children)) for (const c of n.children) walk(c, here, depth + 1);
  };
  walk(root, null, 0);
  return { steps, parents };
}
