// tree.js — the two-level tree. Draws each node, indented by its depth, in
// the order the host walk lands them, with the state, counter, parent field
// and state sets the snapshot read from Valkey.
import { register } from "./lab.js";
import { $, el } from "./cards.js";

function nodeItem(n) {
  const item = el("li", `tree-node depth-${n.depth} state-${n.state || "none"}`);
  item.dataset.node = n.id;
  item.append(el("span", "job-kind", n.role));
  item.append(el("span", "job-id", n.id));
  const state = el("span", "job-state", n.state || "not landed");
  state.dataset.role = `state-${n.id}`;
  item.append(state);
  if (n.dependencies !== null) {
    const deps = el("span", "job-sets", `:dependencies = ${n.dependencies}`);
    deps.dataset.role = `deps-${n.id}`;
    item.append(deps);
  }
  if (n.parent) item.append(el("span", "job-sets", `parent = ${n.parent}`));
  if (n.state && n.state !== "completed") item.append(el("span", "job-sets", n.sets.length ? `in ${n.sets.join(", ")}` : "in no state set"));
  return item;
}

function render(root, snapshot) {
  const { walked, total, nodes } = snapshot.picture;
  const list = el("ol", "tree-nodes");
  list.setAttribute("aria-label", "The tree's nodes in the order the walk lands them");
  for (const n of nodes) list.append(nodeItem(n));
  $(root, "picture").replaceChildren(list);
  root.querySelector('button[data-action="previous"]').disabled = walked === 0;
  root.querySelector('button[data-action="next"]').disabled = walked >= total;
}

register("tree", render);
