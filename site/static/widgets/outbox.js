// outbox.js — the cross-queue outbox. Draws the parent on its slot and one lane
// per child queue (each on a slot of its own): the children, the outbox entries
// in the words the server judged them by (waiting, delivered already, poison,
// refused), the aged Pump's count of a blocked head, and the poison list.
// Every value and word comes from the snapshot the server read from Valkey.
import { register } from "./lab.js";
import { $, el, keyName, jobCard, parentCard, counterBox, dependenciesBefore } from "./cards.js";

function entryList(entries, role) {
  const list = el("ol", "entries");
  list.dataset.role = role;
  list.start = 0;
  if (!entries.length) list.append(el("li", "entry empty", "empty"));
  for (const entry of entries) {
    const item = el("li", `entry entry-${entry.verdict}`, entry.text);
    item.dataset.verdict = entry.verdict;
    list.append(item);
  }
  return list;
}

function lane(q, maxBlocked) {
  const box = el("div", "lane");
  box.dataset.queue = q.part;
  box.append(keyName(`${q.part} · hash slot ${q.slot}`, "h4", "lane-title", "."));
  const kids = el("ul", "children");
  for (const child of q.children) {
    const item = el("li");
    item.dataset.child = child.id;
    item.append(jobCard(child));
    kids.append(item);
  }
  const name = q.part.split(".").pop();
  box.append(kids, el("p", "list-label", "flow:outbox (head first)"), entryList(q.outbox, `outbox-${name}`));
  if (q.head_count) {
    const blocked = el("p", "head-count", `head blocked for ${q.head_count} of ${maxBlocked} aged ticks`);
    blocked.dataset.role = `head-${name}`;
    box.append(blocked);
  }
  box.append(el("p", "list-label", "flow:outbox:poison"), entryList(q.poison, `poison-${name}`));
  return box;
}

function render(root, snapshot, previous) {
  const { parent, queues, max_blocked: maxBlocked, cluster } = snapshot.picture;
  // A slot boundary refuses a script only on a cluster: the button shows there alone.
  const oneScript = root.querySelector('button[data-action="one-script"]');
  if (oneScript) oneScript.hidden = !cluster;
  const processed = el("span", "job-sets", `:processed: ${parent.processed.length ? parent.processed.join(", ") : "empty"}`);
  processed.dataset.role = "processed";
  const slot = keyName(`${parent.queue} · hash slot ${parent.slot}`, "span", "job-slot", ".");
  const lanes = el("div", "lanes");
  for (const q of queues) lanes.append(lane(q, maxBlocked));
  const box = el("div", "flow-picture outbox-picture");
  box.append(parentCard(parent, { extra: [slot, processed] }), counterBox(parent.dependencies, dependenciesBefore(previous)), lanes);
  $(root, "picture").replaceChildren(box);
}

register("outbox", render);
