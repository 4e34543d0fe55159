// tree.js — the two-level tree. Draws each node, indented by its depth, in the
// order the host's walk lands them: its state, counter, parent field and state
// sets as the snapshot read them from Valkey. Next and Previous are disabled
// where the keys say the walk cannot go on (every node landed, or none).
import { register } from "./lab.js";
import { $, el } from "./cards.js";

function nodeItem(n) {
  const item = el("li", `tree-node depth-${n.depth} state-${n.state || "none"}`);
  item.dataset.node = n.id;
  item.append(el("span", "job-kind", n.role), el("span", "job-id", n.id));
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
  const { landed, total, nodes } = snapshot.picture;
  const list = el("ol", "tree-nodes");
  list.setAttribute("aria-label", "The tree's nodes in the order the walk lands them");
  for (const n of nodes) list.append(nodeItem(n));
  $(root, "picture").replaceChildren(list);
  root.querySelector('button[data-action="previous"]').disabled = landed === 0;
  root.querySelector('button[data-action="next"]').disabled = landed >= total;
}

register("tree", render);
