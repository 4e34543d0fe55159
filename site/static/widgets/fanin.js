// fanin.js — the fan-in counter. Draws the held parent, its counter and its
// three children from the snapshot the server read from Valkey.
import { register, $, el, jobCard, counterBox } from "./lab.js";

function render(root, snapshot, previous) {
  const { parent, children } = snapshot.picture;
  const before = previous && previous.picture ? previous.picture.parent.dependencies : null;
  const box = el("div", "flow-picture");
  box.append(jobCard(parent, { parent: true, role: "parent-state" }), counterBox(parent.dependencies, before));
  const list = el("ul", "children");
  list.setAttribute("aria-label", "The children");
  for (const child of children) {
    const item = el("li");
    item.append(jobCard(child));
    list.append(item);
  }
  box.append(list);
  $(root, "picture").replaceChildren(box);
}

register("fanin", render);
