// outbox.js — the cross-queue outbox. Draws the parent on its slot and, per
// child queue (each on its own slot), the children, the outbox entries as the
// server decoded them, and the poison list. Every value comes from the snapshot.
import { register } from "./lab.js";
import { $, el, keyName, jobCard, parentCard, counterBox, dependenciesBefore } from "./cards.js";

function entryList(entries, role, empty) {
  const list = el("ol", "entries");
  list.dataset.role = role;
  list.start = 0;
  if (!entries.length) list.append(el("li", "entry empty", empty));
  for (const entry of entries) list.append(el("li", entry.poison ? "entry poison" : "entry", entry.text));
  return list;
}

function lane(q, maxBlocked) {
  const box = el("div", "lane");
  box.dataset.queue = q.part;
  box.append(keyName(`${q.queue} · hash slot ${q.slot}`, "h4", "lane-title", "."));
  const kids = el("ul", "children");
  for (const child of q.children) {
    const item = el("li");
    item.append(jobCard(child));
    kids.append(item);
  }
  box.append(kids);
  box.append(el("p", "list-label", "flow:outbox (head first)"));
  box.append(entryList(q.outbox, `outbox-${q.part}`, "empty"));
  if (q.head_count) {
    const blocked = el("p", "head-count", `head blocked for ${q.head_count} of ${maxBlocked} aged ticks`);
    blocked.dataset.role = `head-${q.part}`;
    box.append(blocked);
  }
  box.append(el("p", "list-label", "flow:outbox:poison"));
  box.append(entryList(q.poison, `poison-${q.part}`, "empty"));
  return box;
}

function render(root, snapshot, previous) {
  const { parent, queues, max_blocked: maxBlocked, cluster } = snapshot.picture;
  // "Try it as one script" exists only on a cluster, where a slot boundary is real.
  const oneScript = root.querySelector('button[data-action="one-script"]');
  if (oneScript) oneScript.hidden = !cluster;
  const box = el("div", "flow-picture outbox-picture");
  const processed = el("span", "job-sets", `:processed: ${parent.processed.length ? parent.processed.join(", ") : "empty"}`);
  processed.dataset.role = "processed";
  const slot = keyName(`${parent.queue} · hash slot ${parent.slot}`, "span", "job-slot", ".");
  const card = parentCard(parent, { extra: [slot, processed] });
  const counter = counterBox(parent.dependencies, dependenciesBefore(previous));

  const lanes = el("div", "lanes");
  for (const q of queues) lanes.append(lane(q, maxBlocked));
  box.append(card, counter, lanes);
  $(root, "picture").replaceChildren(box);
}

register("outbox", render);
