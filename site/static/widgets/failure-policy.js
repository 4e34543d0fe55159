// failure-policy.js — the failure policy. Checks the radio the server keeps in
// Valkey (none, for the mixed flow) and draws the parent, its counter and its
// :ignored hash, each child with the parent_policy token read from its row,
// and the cross-queue flow with mail's outbox entries in the server's words.
// Every value comes from the snapshot.
import { register, act } from "./lab.js";
import { $, el, parentCard, jobCard, counterBox, dependenciesBefore } from "./cards.js";

function ignoredLine(parent, role) {
  const ignored = Object.entries(parent.ignored);
  const line = el("span", "job-sets", `:ignored: ${ignored.length ? ignored.map(([c, e]) => `${c} → ${e}`).join(", ") : "empty"}`);
  line.dataset.role = role;
  return line;
}

function childCard(child) {
  const extra = [];
  if (child.policy) extra.push(el("span", "policy-token", `parent_policy ${child.policy}`));
  if (child.attempts) extra.push(el("span", "job-sets", `attempts ${child.attempts}`));
  if (child.error) extra.push(el("span", "job-sets", `last_error: ${child.error}`));
  const item = el("li");
  item.dataset.child = child.id;
  item.append(jobCard(child, { extra }));
  return item;
}

function linkedFlow(linked, previous) {
  const box = el("div", "flow-picture linked-flow");
  box.dataset.role = "linked";
  box.append(el("p", "hint", "The cross-queue flow: its parent here, its child in failure-policy.mail"));
  const card = parentCard(linked.parent, { role: "linked-state", extra: [ignoredLine(linked.parent, "linked-ignored")] });
  const counter = counterBox(linked.parent.dependencies, dependenciesBefore(previous, (p) => p.linked && p.linked.parent));
  counter.querySelector("output").dataset.role = "linked-dependencies";
  const list = el("ul", "children");
  list.append(childCard(linked.child));
  const outbox = el("ol", "entries");
  outbox.dataset.role = "linked-outbox";
  outbox.setAttribute("aria-label", "mail's flow:outbox, head first");
  if (!linked.outbox.length) outbox.append(el("li", "entry empty", "mail's flow:outbox is empty"));
  for (const words of linked.outbox) outbox.append(el("li", "entry", words));
  box.append(card, counter, list, outbox);
  return box;
}

function render(root, snapshot, previous) {
  const { policy, variant, parent, children, linked } = snapshot.picture;
  // The mixed flow has no one policy on every child: no radio is checked, so
  // picking either lands the uniform flow again.
  for (const value of ["fp", "id"]) $(root, `policy-${value}`).checked = variant !== "mixed" && policy === value;
  const card = parentCard(parent, { setsRole: "parent-sets", extra: [ignoredLine(parent, "ignored")] });
  const list = el("ul", "children");
  for (const child of children) list.append(childCard(child));
  const label = el("p", "hint", variant === "mixed" ? "The mixed flow: each child its own token" : `Every child on ${policy}`);
  label.dataset.role = "variant";
  const box = el("div", "flow-picture");
  box.append(label, card, counterBox(parent.dependencies, dependenciesBefore(previous)), list);
  $(root, "picture").replaceChildren(box, linkedFlow(linked, previous));
}

const root = register("failure-policy", render);
if (root) {
  root.querySelectorAll('input[name="failure-policy-choice"]').forEach((radio) => {
    radio.addEventListener("change", () => {
      if (radio.checked) act("failure-policy", "policy", { policy: radio.value });
    });
  });
}
