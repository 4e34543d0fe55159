// fanin.js — the fan-in counter. Draws the held parent, its counter, its three
// children (token and lease from their rows and from active) and the picker of
// claimed children, all from the snapshot the server read from Valkey.
import { register } from "./lab.js";
import { $, el, parentCard, jobCard, counterBox, dependenciesBefore } from "./cards.js";

const PICKED = ["complete-child", "stale", "lapse"];

function fillPicker(root, active) {
  const select = $(root, "pick-child");
  const kept = select.value;
  const options = active.map((a) => {
    const option = el("option", "", `${a.id} · token ${a.token}`);
    option.value = a.id;
    return option;
  });
  if (!options.length) {
    const none = el("option", "", "none claimed");
    none.value = "";
    options.push(none);
  }
  select.replaceChildren(...options);
  if (active.some((a) => a.id === kept)) select.value = kept;
  select.disabled = active.length === 0;
}

function render(root, snapshot, previous) {
  const { parent, children, active, lapsed } = snapshot.picture;
  const box = el("div", "flow-picture");
  box.append(parentCard(parent), counterBox(parent.dependencies, dependenciesBefore(previous)));
  const list = el("ul", "children");
  list.setAttribute("aria-label", "The children");
  for (const child of children) {
    const extra = [];
    if (child.token !== null) extra.push(el("span", "job-token", `token ${child.token}`));
    if (child.deadline) extra.push(el("span", "job-lease", `lease until ${child.deadline}`));
    const item = el("li");
    item.dataset.child = child.id;
    item.append(jobCard(child, { extra }));
    list.append(item);
  }
  box.append(list);
  if (lapsed) box.append(el("p", "hint", `the lapsed lease: ${lapsed.id}, its first worker holds token ${lapsed.token}`));
  $(root, "picture").replaceChildren(box);
  fillPicker(root, active);
}

const root = register("fanin", render, (action) => {
  const child = root && $(root, "pick-child").value;
  return PICKED.includes(action) && child ? { child } : {};
});
