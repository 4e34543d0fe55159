// dom.js — the few DOM helpers the page's scripts share: an element by role,
// a new element, a widget's status line and its spoken announcements.

/** The element of `root` that plays `role` (its data-role). */
export const $ = (root, role) => root.querySelector(`[data-role="${role}"]`);

/** A new element: its attributes (a function is a handler: `onclick`), then its children (text or nodes). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (typeof value === "function") node[name] = value;
    else node.setAttribute(name, value);
  }
  node.append(...children);
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

/** POST `body` to the site as JSON (fetch sends the visitor's cookies to its own origin by default). */
export function post(url, body, headers = {}) {
  const sent = { "Content-Type": "application/json", ...headers };
  return fetch(url, { method: "POST", headers: sent, body: JSON.stringify(body) });
}

/** The site's JSON answer at `url`, or null when it refuses or is away (the page keeps what it shows). */
export async function getJSON(url) {
  try {
    const response = await fetch(url);
    return response.ok ? await response.json() : null;
  } catch (err) {
    return null;
  }
}
