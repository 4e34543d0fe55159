// cards.js — the pieces every widget's picture is drawn with: an element, a
// job card, the parent's card, the :dependencies counter and key names that
// wrap at the grammar's joints. Each draws what it is given; nothing here
// reads a key or computes a value to show (the snapshot carries every one).

/** The element of `root` that plays `role` (its data-role). */
export const $ = (root, role) => root.querySelector(`[data-role="${role}"]`);

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** A job card: its id, its state as its row says, the state sets holding it. */
export function jobCard(job, { parent = false, role = null, setsRole = null, extra = [] } = {}) {
  const card = el("div", `job${parent ? " job-parent" : ""} state-${job.state || "none"}`);
  if (parent) card.append(el("span", "job-kind", "parent"));
  card.append(el("span", "job-id", job.id));
  const state = el("span", "job-state", job.state || "no row");
  if (role) state.dataset.role = role;
  card.append(state);
  const sets = job.sets || (job.set ? [job.set] : []);
  let where = null;
  // A retired child has no row: the server's words say where Valkey keeps its signal.
  if (!job.state && job.where) where = el("span", "job-sets", job.where);
  else if (sets.length) where = el("span", "job-sets", `in ${sets.join(", ")}`);
  else if (parent && job.state) where = el("span", "job-sets", "in no state set");
  if (where && setsRole) where.dataset.role = setsRole;
  if (where) card.append(where);
  for (const node of extra) card.append(node);
  return card;
}

/** The flow's parent: a job card whose state tests and readers find as "parent-state". */
export function parentCard(parent, { role = "parent-state", setsRole = null, extra = [] } = {}) {
  return jobCard(parent, { parent: true, role, setsRole, extra });
}

/** The :dependencies counter, marked when it moved since the previous state. */
export function counterBox(value, before) {
  const counter = el("div", "counter");
  counter.append(el("span", "counter-label", ":dependencies"));
  const out = el("output", "counter-value", value === null || value === undefined ? "—" : String(value));
  out.dataset.role = "dependencies";
  if (before !== null && before !== undefined && before !== value) out.classList.add("changed");
  counter.append(out);
  return counter;
}

/** The parent's counter in the previous snapshot, or null when there is none. */
export function dependenciesBefore(previous, pick = (picture) => picture.parent) {
  const picture = previous && previous.picture;
  const parent = picture ? pick(picture) : null;
  return parent ? parent.dependencies : null;
}

export function queueLabel(queue) {
  // the server names a queue as the learner writes it: "fanin", "outbox.mail"
  return queue;
}

/** A key name that may wrap only after ":" and "}" (the grammar's joints),
 *  never mid-word; a queue name passes "." as its joints. */
export function keyName(name, tag = null, className = "", joints = ":}") {
  const frag = tag ? el(tag, className) : document.createDocumentFragment();
  let start = 0;
  for (let i = 0; i < name.length; i += 1) {
    if (!joints.includes(name[i])) continue;
    frag.append(document.createTextNode(name.slice(start, i + 1)), document.createElement("wbr"));
    start = i + 1;
  }
  if (start < name.length) frag.append(document.createTextNode(name.slice(start)));
  return frag;
}

/** A key's name after its hash tag: "emq:{q}:job:J" -> ":job:J". */
export function shortName(name) {
  const close = name.indexOf("}");
  return close >= 0 ? name.slice(close + 1) : name;
}
