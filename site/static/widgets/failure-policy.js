// failure-policy.js — the failure policy. Keeps the radio on the server's
// remembered choice and draws the parent, its counter, its :ignored hash and
// each child with the parent_policy token read from its row.
import { register, act, $, el, jobCard, counterBox } from "./lab.js";

function render(root, snapshot, previous) {
  const { policy, parent, children } = snapshot.picture;
  for (const value of ["fp", "id"]) $(root, `policy-${value}`).checked = policy === value;
  const before = previous && previous.picture ? previous.picture.parent.dependencies : null;
  const ignored = Object.entries(parent.ignored);
  const ign = el("span", "job-sets", `:ignored: ${ignored.length ? ignored.map(([c, e]) => `${c} → ${e}`).join(", ") : "empty"}`);
  ign.dataset.role = "ignored";
  const card = jobCard(parent, { parent: true, role: "parent-state", setsRole: "parent-sets", extra: [ign] });

  const list = el("ul", "children");
  for (const child of children) {
    const extra = [];
    if (child.policy) extra.push(el("span", "policy-token", `parent_policy ${child.policy}`));
    if (child.error) extra.push(el("span", "job-sets", `last_error: ${child.error}`));
    const item = el("li");
    item.append(jobCard(child, { extra }));
    list.append(item);
  }
  const box = el("div", "flow-picture");
  box.append(card, counterBox(parent.dependencies, before), list);
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
