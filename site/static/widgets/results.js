// results.js — the results reader. Draws the parent and its children as the
// snapshot read them from Valkey and, beside them, what the three reads
// returned at the last "Read the results" (kept in Valkey, with the server's
// word on whether Valkey still holds exactly that).
import { register } from "./lab.js";
import { $, el, jobCard, parentCard, counterBox, dependenciesBefore } from "./cards.js";

const asDict = (found) => {
  const pairs = Object.entries(found || {});
  return pairs.length ? `{${pairs.map(([k, v]) => `${k}: ${v}`).join(", ")}}` : "{} (empty)";
};

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
    ? `The reads wrote nothing: all ${read.keys} key${read.keys === 1 ? "" : "s"} DUMP as before.`
    : "The queue's keys changed while the reads ran.";
  const note = read.current ? "Valkey still holds exactly this." : "Valkey has moved on since this read: read again.";
  const p = el("p", read.current ? "results-note" : "results-note stale", `${proof} ${note}`);
  p.dataset.role = "read-note";
  box.append(p);
  return box;
}

function render(root, snapshot, previous) {
  const { parent, children, read } = snapshot.picture;
  const box = el("div", "flow-picture results-picture");
  box.append(parentCard(parent), counterBox(parent.dependencies, dependenciesBefore(previous)));
  const list = el("ul", "children");
  list.setAttribute("aria-label", "The children");
  for (const child of children) {
    const item = el("li");
    item.dataset.child = child.id;
    item.append(jobCard(child));
    list.append(item);
  }
  box.append(list, reads(read));
  $(root, "picture").replaceChildren(box);
}

register("results", render);
