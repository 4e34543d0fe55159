// fanin.js — the fan-in counter. Draws the parent, its counter and its three
// children from the snapshot the server read from Valkey.
import { register, $ } from "./lab.js";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function render(root, snapshot, previous) {
  const { parent, children } = snapshot.picture;
  const before = previous && previous.picture ? previous.picture.parent.dependencies : null;
  const box = el("div", "flow-picture");

  const counter = el("div", "counter");
  counter.append(el("span", "counter-label", ":dependencies"));
  const value = el("output", "counter-value", parent.dependencies === null ? "—" : String(parent.dependencies));
  value.dataset.role = "dependencies";
  if (before !== null && before !== parent.dependencies) value.classList.add("changed");
  counter.append(value);

  const parentCard = el("div", `job job-parent state-${parent.state || "none"}`);
  parentCard.append(el("span", "job-id", parent.id));
  const pstate = el("span", "job-state", parent.state || "no row");
  pstate.dataset.role = "parent-state";
  parentCard.append(pstate);
  parentCard.append(el("span", "job-sets", parent.sets.length ? `in ${parent.sets.join(", ")}` : "in no state set"));

  const list = el("ul", "children");
  for (const child of children) {
    const item = el("li", `job state-${child.state || "none"}`);
    item.append(el("span", "job-id", child.id));
    item.append(el("span", "job-state", child.state || "no row"));
    if (child.set) item.append(el("span", "job-sets", `in ${child.set}`));
    list.append(item);
  }
  box.append(parentCard, counter, list);
  $(root, "picture").replaceChildren(box);
}

register("fanin", render);
