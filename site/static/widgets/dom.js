// dom.js — the few DOM helpers the page's scripts share: an element by role,
// a new element, a widget's status line and its spoken announcements, and a
// key's value as the key panel prints it (the exercise's key tables).

/** The element of `root` that plays `role` (its data-role). */
export const $ = (root, role) => root.querySelector(`[data-role="${role}"]`);

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

/** A new element with its text and its data-role (the class's pieces: room.js, class.js). */
export function withRole(tag, text, role) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = text;
  if (role) node.dataset.role = role;
  return node;
}

export function setStatus(root, text, kind = "") {
  const status = $(root, "status");
  // only what changed is written: clearing a clear line is no change on the page
  if (status.textContent !== text) status.textContent = text;
  if ((status.dataset.kind || "") !== kind) status.dataset.kind = kind;
}

export function announce(root, text) {
  const live = $(root, "announce");
  // A repeated sentence must still differ from the last one for a screen
  // reader to speak it again: alternate a trailing no-break space, at once.
  const flip = live.dataset.flip === "1" ? "0" : "1";
  live.dataset.flip = flip;
  live.textContent = flip === "1" ? `${text}\u00a0` : text;
}

/** A key's value as text, as the server's key panel prints it (server/widgets/draw.py key_text). */
export function formatValue(key) {
  const v = key.value;
  const size = key.type === "string" ? `${key.size} bytes` : `${key.size} elements`;
  if (v === null) return `(${size}; not shown: this snapshot's budget is spent)`;
  const note = key.cut ? `\n… (${size} in all; the first shown)` : "";
  let text;
  if (key.type === "hash") text = Object.entries(v).map(([f, x]) => `${f} = ${x}`).join("\n") || "(empty)";
  else if (key.type === "zset") text = v.map(([m, s]) => `${m} (score ${s})`).join("\n") || "(empty)";
  else if (key.type === "list") text = v.map((x, i) => `[${i}] ${x}`).join("\n") || "(empty)";
  else text = String(v);
  return text + note;
}

/** A key's name with a break opportunity after each ":" and "}" (long names wrap there, not mid-word). */
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
