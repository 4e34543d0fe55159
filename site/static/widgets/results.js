// results.js — the results reader. Draws the parent and its children as the
// snapshot read them, and beside them the answers the three reads returned.
import { register, $, el } from "./lab.js";

const asDict = (found) => {
  const pairs = Object.entries(found);
  return pairs.length ? `{${pairs.map(([k, v]) => `${k}: ${v}`).join(", ")}}` : "{} (empty)";
};

function parentCard(parent) {
  const card = el("div", `job job-parent state-${parent.state || "none"}`);
  card.append(el("span", "job-id", parent.id));
  const state = el("span", "job-state", parent.state || "no row");
  state.dataset.role = "parent-state";
  card.append(state, el("span", "job-sets", parent.sets.length ? `in ${parent.sets.join(", ")}` : "in no state set"));
  const deps = el("span", "job-sets", `:dependencies = ${parent.dependencies}`);
  deps.dataset.role = "dependencies";
  card.append(deps);
  return card;
}

function reads(read) {
  const box = el("div", "results-reads");
  box.append(el("h4", "", "What the three reads returned"));
  if (!read) {
    box.append(el("p", "hint", "Nothing read yet: press Read the results."));
    return box;
  }
  const list = el("dl", "results-answers");
  const rows = [
    ["results.children_values", asDict(read.values), "read-values"],
    ["results.dependencies", String(read.dependencies), "read-dependencies"],
    ["results.ignored_failures", asDict(read.ignored), "read-ignored"],
  ];
  for (const [call, answer, role] of rows) {
    const dd = el("dd", "", answer);
    dd.dataset.role = role;
    list.append(el("dt", "", call), dd);
  }
  box.append(list);
  const proof = read.unchanged
    ? `The reads wrote nothing: ${read.keys} key${read.keys === 1 ? "" : "s"} unchanged.`
    : "The queue's keys changed while the reads ran.";
  const note = read.current ? "Valkey still holds exactly this." : "Valkey has moved on since this read: read again.";
  const p = el("p", read.current ? "results-note" : "results-note stale", `${proof} ${note}`);
  p.dataset.role = "read-note";
  box.append(p);
  return box;
}

function render(root, snapshot) {
  const { parent, children, read } = snapshot.picture;
  const box = el("div", "results-picture");
  const list = el("ul", "children");
  for (const child of children) {
    const item = el("li", `job state-${child.state || "none"}`);
    item.append(el("span", "job-id", child.id), el("span", "job-state", child.state || "no row"));
    if (child.set) item.append(el("span", "job-sets", `in ${child.set}`));
    list.append(item);
  }
  box.append(parentCard(parent), list, reads(read));
  $(root, "picture").replaceChildren(box);
}

register("results", render);
