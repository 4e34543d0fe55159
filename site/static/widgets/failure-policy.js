// failure-policy.js — the failure policy. Keeps the radio on the server's
// remembered choice and draws the parent, its counter, its :ignored hash and
// each child with the parent_policy token read from its row.
import { register, act, $ } from "./lab.js";

function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

function render(root, snapshot, previous) {
  const { policy, parent, children } = snapshot.picture;
  for (const value of ["fp", "id"]) $(root, `policy-${value}`).checked = policy === value;
  const before = previous && previous.picture ? previous.picture.parent.dependencies : null;
  const box = el("div", "flow-picture");

  const parentCard = el("div", `job job-parent state-${parent.state || "none"}`);
  parentCard.append(el("span", "job-id", parent.id));
  const pstate = el("span", "job-state", parent.state || "no row");
  pstate.dataset.role = "parent-state";
  parentCard.append(pstate);
  const sets = el("span", "job-sets", parent.sets.length ? `in ${parent.sets.join(", ")}` : "in no state set");
  sets.dataset.role = "parent-sets";
  parentCard.append(sets);
  const ignored = Object.entries(parent.ignored);
  const ign = el("span", "job-sets", `:ignored: ${ignored.length ? ignored.map(([c, e]) => `${c} → ${e}`).join(", ") : "empty"}`);
  ign.dataset.role = "ignored";
  parentCard.append(ign);

  const counter = el("div", "counter");
  counter.append(el("span", "counter-label", ":dependencies"));
  const value = el("output", "counter-value", parent.dependencies === null ? "—" : String(parent.dependencies));
  value.dataset.role = "dependencies";
  if (before !== null && before !== parent.dependencies) value.classList.add("changed");
  counter.append(value);

  const list = el("ul", "children");
  for (const child of children) {
    const item = el("li", `job state-${child.state || "none"}`);
    item.append(el("span", "job-id", child.id), el("span", "job-state", child.state || "no row"));
    if (child.set) item.append(el("span", "job-sets", `in ${child.set}`));
    if (child.policy) item.append(el("span", "policy-token", `parent_policy ${child.policy}`));
    if (child.error) item.append(el("span", "job-sets", `last_error: ${child.error}`));
    list.append(item);
  }
  box.append(parentCard, counter, list);
  $(root, "picture").replaceChildren(box);
}

const root = register("failure-policy", render);
if (root) {
  root.querySelectorAll('input[name="failure-policy-choice"]').forEach((radio) => {
    radio.addEventListener("change", () => {
      if (radio.checked) act("failure-policy", "policy", { policy: radio.value });
    });
  });
}
