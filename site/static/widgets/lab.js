// lab.js — what every widget on a page shares: the API call, the one live
// stream, the deep links, the key panel, the state sets, the effects log and
// the spoken announcements. Nothing here computes a value to show: every
// number and every member comes from a snapshot the server read from Valkey.

import { afterPaint, followRoom, showRoom } from "./room.js";

const registry = new Map(); // widget name -> { root, render, last, before, changed, painted }
// This page's name for itself: an outcome caused by another page of the
// sandbox (another tab, a class member, the instructor) says so.
const TAB = Array.from({ length: 12 }, () => Math.floor(Math.random() * 36).toString(36)).join("");
let source = null;
let streamScheduled = false;
let hashWatched = false;

const $ = (root, role) => root.querySelector(`[data-role="${role}"]`);

// Extensions (predict.js): each may add fields to an action's body
// (`body(name, action, root)`), and sees every snapshot painted
// (`paint(name, root, snapshot)`) and every action's answer (`acted(name, root, data)`).
export const extensions = [];

export function el(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

// `bodyFor(action)`, when given, is the body a button's action sends (e.g. the
// child a learner picked); without it every button sends an empty body.
export function register(name, render, bodyFor = null) {
  const root = document.querySelector(`[data-widget="${name}"]`);
  if (!root) return null;
  const entry = { root, render, last: null, before: null, changed: new Set(), painted: null };
  registry.set(name, entry);
  // Live from here on: the controls and panels show, the recorded trace
  // (the page without JavaScript) folds away under "The whole run at a glance".
  root.classList.add("is-live");
  const trace = $(root, "trace");
  if (trace) trace.open = false;
  root.querySelectorAll("button[data-action]").forEach((button) => {
    button.addEventListener("click", () => act(name, button.dataset.action, bodyFor ? bodyFor(button.dataset.action) : {}));
  });
  entry.ready = load(name);
  followHash(name);
  if (!hashWatched) {
    hashWatched = true;
    window.addEventListener("hashchange", () => { for (const n of registry.keys()) followHash(n); });
  }
  if (!streamScheduled) {
    streamScheduled = true;
    // Open the stream once every module on the page has registered: module
    // scripts all run before DOMContentLoaded.
    if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", openStream, { once: true });
    else setTimeout(openStream, 0);
  }
  return root;
}

// ---- deep links: #step=N (the page's first widget), #<widget>-step=N -------

export function hashStep(name, root, hash = location.hash) {
  const own = new RegExp(`(?:^#|&)${name}-step=(\\d+)(?:&|$)`).exec(hash);
  if (own) return Number(own[1]);
  const first = /(?:^#|&)step=(\d+)(?:&|$)/.exec(hash);
  if (first && document.querySelector("[data-widget]") === root) return Number(first[1]);
  return null;
}

function followHash(name) {
  const entry = registry.get(name);
  const step = hashStep(name, entry.root);
  // The server resets the widget and replays its tour to that step on Valkey;
  // act() waits for the widget's first load before it asks.
  if (step === null) return;
  act(name, "goto", { step }).then(() => {
    // The link names this widget: show it and put the keyboard there.
    if (!entry.root.hasAttribute("tabindex")) entry.root.tabIndex = -1;
    entry.root.scrollIntoView({ block: "start" });
    entry.root.focus({ preventScroll: true });
  });
}

async function load(name) {
  try {
    const response = await fetch(`/api/widgets/${name}/state`, { credentials: "same-origin" });
    const body = await response.json();
    if (!response.ok) return showProblem(name, body.error || response.statusText, response.status);
    showRoom(body.room);
    paint(name, body.snapshot);
  } catch (err) {
    showProblem(name, "The site is unreachable; retrying.", 0);
    await new Promise((resolve) => setTimeout(resolve, 1000));
    return load(name);
  }
}

export async function act(name, action, body = {}) {
  const entry = registry.get(name);
  await entry.ready;
  entry.root.setAttribute("aria-busy", "true");
  const extra = extensions.map((x) => (x.body ? x.body(name, action, entry.root) : {}));
  try {
    const response = await fetch(`/api/widgets/${name}/${action}`, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-Emqlab-Tab": TAB },
      body: JSON.stringify(Object.assign({}, body, ...extra)),
    });
    const data = await response.json();
    if (!response.ok) {
      showProblem(name, data.error || response.statusText, response.status);
      return null;
    }
    setStatus(entry.root, "");
    showRoom(data.room);
    // The outcome comes with the snapshot (it is kept in Valkey): one paint,
    // the same one every other page of the sandbox gets from the stream.
    paint(name, data.snapshot);
    for (const x of extensions) if (x.acted) x.acted(name, entry.root, data);
    return data;
  } catch (err) {
    showProblem(name, "The site is unreachable; retrying.", 0);
    return null;
  } finally {
    entry.root.removeAttribute("aria-busy");
  }
}

// The widget's last outcome as Valkey keeps it, or none (after a reset).
function showOutcome(root, outcome, isNew) {
  const box = $(root, "outcome");
  if (!outcome) {
    box.hidden = true;
    box.textContent = "";
    return;
  }
  const who = outcome.by === "instructor" && outcome.tab !== TAB
    ? "The instructor: "
    : outcome.tab && outcome.tab !== TAB ? "From another page of this sandbox: " : "";
  const text = `${who}${outcome.text}`;
  box.hidden = false;
  box.textContent = text;
  box.dataset.kind = outcome.kind;
  box.dataset.outcomeOf = outcome.action || "";
  if (isNew) announce(root, text);
  // The answer to this page's own click sits at the top of the panel (pinned
  // there while the aside scrolls, widgets.css); bring it into view if it is not.
  // Measured on the next frame, once the readout and picture above and around
  // it have been drawn from the same snapshot.
  if (isNew && outcome.tab === TAB) requestAnimationFrame(() => bringIntoView(root, box));
}

function bringIntoView(root, box) {
  const r = box.getBoundingClientRect();
  const aside = root.closest(".dive-aside");
  const bottom = Math.min(window.innerHeight, aside ? aside.getBoundingClientRect().bottom : Infinity);
  if (r.top < 0 || r.bottom > bottom) box.scrollIntoView({ block: "center" });
}

export function announce(root, text) {
  const live = $(root, "announce");
  // Clearing first makes a screen reader speak a repeated sentence again.
  live.textContent = "";
  setTimeout(() => { live.textContent = text; }, 30);
}

function setStatus(root, text, kind = "") {
  const status = $(root, "status");
  status.textContent = text;
  status.dataset.kind = kind;
}

function showProblem(name, message, status) {
  const entry = registry.get(name);
  if (!entry) return;
  const kind = status === 503 || status === 0 ? "down" : "error";
  setStatus(entry.root, message, kind);
  announce(entry.root, message);
}

function paint(name, snapshot) {
  const entry = registry.get(name);
  if (!entry || !snapshot) return;
  // One truth, one paint: a snapshot older than the one on the page (an
  // answer overtaken by the stream, or the other way round) is dropped, and
  // the same snapshot twice is painted once.
  if (entry.last && snapshot.ver < entry.last.ver) return;
  const text = JSON.stringify(snapshot);
  if (text === entry.painted) return;
  entry.painted = text;
  // what the page shows is this version of the widget's state (tests and
  // tools can tell two pages apart by it)
  entry.root.dataset.ver = String(snapshot.ver);
  const isNew = JSON.stringify(snapshot.outcome) !== JSON.stringify(entry.last ? entry.last.outcome : null);
  showOutcome(entry.root, snapshot.outcome, isNew && snapshot.outcome !== null);
  // The answer to a click and the stream's snapshot right after it are often
  // the same keys: keep comparing with the state before the change, so what
  // the click changed stays highlighted until the next change.
  const same = entry.last !== null && JSON.stringify(entry.last.queues) === JSON.stringify(snapshot.queues);
  if (!same) {
    entry.before = entry.last;
    entry.changed = changedKeys(snapshot, entry.last);
  }
  const previous = same ? entry.before : entry.last;
  entry.last = snapshot;
  $(entry.root, "readout").textContent = snapshot.readout || "";
  renderKeys(entry.root, snapshot, entry.changed);
  renderSets($(entry.root, "sets"), snapshot, previous);
  entry.render(entry.root, snapshot, previous);
  for (const x of extensions) if (x.paint) x.paint(name, entry.root, snapshot);
  afterPaint(entry.root);
}

// ---- shared pieces of a state picture -------------------------------------

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

export function queueLabel(queue) {
  // "<sandbox>.outbox.mail" -> "outbox.mail": the sandbox is the same on every key
  const dot = queue.indexOf(".");
  return dot >= 0 ? queue.slice(dot + 1) : queue;
}

// ---- the state sets: pending, active, schedule, dead ------------------------

const SETS = ["pending", "active", "schedule", "dead"];

function setMembers(q) {
  const found = {};
  for (const key of q.keys) {
    const suffix = shortName(key.name).replace(/^:/, "");
    if (key.type === "zset" && SETS.includes(suffix)) found[suffix] = key.value.map(([m]) => m);
  }
  return found;
}

function renderSets(container, snapshot, previous) {
  if (!container) return;
  const before = new Map((previous ? previous.queues : []).map((q) => [q.queue, setMembers(q)]));
  const frag = document.createDocumentFragment();
  for (const q of snapshot.queues) {
    const members = setMembers(q);
    const old = before.get(q.queue) || {};
    const box = el("div", "sets-queue");
    box.append(el("p", "sets-title", `${queueLabel(q.queue)} · state sets`));
    const list = el("dl", "sets");
    for (const name of SETS) {
      const cell = el("div", `set set-${name}`);
      cell.append(el("dt", "", name));
      const dd = el("dd");
      dd.dataset.role = `set-${name}`;
      const now = members[name] || [];
      if (now.length === 0) dd.append(el("span", "set-empty", "empty"));
      for (const m of now) {
        const chip = el("span", "member", m);
        if (previous && !(old[name] || []).includes(m)) chip.classList.add("changed");
        dd.append(chip);
      }
      cell.append(dd);
      list.append(cell);
    }
    box.append(list);
    frag.append(box);
  }
  container.replaceChildren(frag);
}

// ---- the key panel ------------------------------------------------------

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

export function shortName(name) {
  const close = name.indexOf("}");
  return close >= 0 ? name.slice(close + 1) : name;
}

export function formatValue(key) {
  const v = key.value;
  switch (key.type) {
    case "hash":
      return Object.entries(v).map(([f, x]) => `${f} = ${x}`).join("\n") || "(empty)";
    case "zset":
      return v.map(([m, s]) => `${m} (score ${s})`).join("\n") || "(empty)";
    case "list":
      return v.map((x, i) => `[${i}] ${x}`).join("\n") || "(empty)";
    default:
      return String(v);
  }
}

function keyIndex(snapshot) {
  const index = new Map();
  if (!snapshot) return index;
  for (const q of snapshot.queues) for (const k of q.keys) index.set(k.name, JSON.stringify(k.value));
  return index;
}

export function changedKeys(snapshot, previous) {
  if (!previous) return new Set();
  const before = keyIndex(previous);
  const changed = new Set();
  for (const [name, value] of keyIndex(snapshot)) if (before.get(name) !== value) changed.add(name);
  return changed;
}

function renderKeys(root, snapshot, changed) {
  const container = $(root, "keys");
  const frag = document.createDocumentFragment();
  for (const q of snapshot.queues) {
    const table = document.createElement("table");
    table.className = "keys";
    const caption = table.createCaption();
    caption.textContent = `queue ${q.queue} · hash slot ${q.slot}${q.node ? ` · node ${q.node}` : ""} · ${q.count} key${q.count === 1 ? "" : "s"}`;
    const head = table.createTHead().insertRow();
    for (const label of ["key", "type", "value"]) {
      const th = document.createElement("th");
      th.scope = "col";
      th.textContent = label;
      head.appendChild(th);
    }
    const body = table.createTBody();
    if (q.keys.length === 0) {
      const row = body.insertRow();
      const cell = row.insertCell();
      cell.colSpan = 3;
      cell.textContent = "no keys: Valkey holds nothing for this queue";
    }
    for (const key of q.keys) {
      const row = body.insertRow();
      row.dataset.key = key.name;
      const name = row.insertCell();
      name.className = "key-name";
      name.append(keyName(key.name));
      if (changed.has(key.name)) {
        row.classList.add("changed");
        name.append(el("span", "visually-hidden", " (changed by the last step)"));
      }
      const type = row.insertCell();
      type.className = "key-type";
      type.textContent = key.type;
      const value = row.insertCell();
      value.className = "key-value";
      value.textContent = formatValue(key);
    }
    frag.appendChild(table);
  }
  container.replaceChildren(frag);
  const count = $(root, "raw-count");
  if (count) {
    // The total is the server's count; the changed rows are marked, not counted.
    const total = snapshot.key_count;
    const moved = changed.size ? ", the ones the last step changed marked" : "";
    count.textContent = `(${total} key${total === 1 ? "" : "s"}${moved})`;
  }
}

// ---- the effects log ----------------------------------------------------

function clock(seconds) {
  const at = new Date(seconds * 1000);
  return at.toLocaleTimeString([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });
}

function logEffect(entry, effect) {
  const list = $(entry.root, "effects");
  const item = el("li", "effect");
  item.title = effect.key;
  if (effect.at) item.append(el("time", "effect-time", clock(effect.at)));
  item.append(el("code", "effect-verb", effect.event));
  const several = entry.last && entry.last.queues.length > 1;
  const where = several && effect.queue ? `${queueLabel(effect.queue)} ` : "";
  item.append(keyName(`${where}${shortName(effect.key)}`, "span", "effect-key"));
  // The words come with the event: the server says what the write did (server/live/effects.py).
  if (effect.words) item.append(el("span", "effect-words", effect.words));
  list.prepend(item);
  while (list.children.length > 40) list.lastChild.remove();
}

// ---- the live stream ----------------------------------------------------

function openStream() {
  if (source || registry.size === 0) return;
  const names = [...registry.keys()].join(",");
  source = new EventSource(`/api/stream?widgets=${encodeURIComponent(names)}`);
  source.addEventListener("snapshot", (e) => {
    const snapshot = JSON.parse(e.data);
    paint(snapshot.widget, snapshot);
  });
  source.addEventListener("effect", (e) => {
    const effect = JSON.parse(e.data);
    const entry = registry.get(effect.widget);
    if (entry) logEffect(entry, effect);
  });
  source.addEventListener("status", (e) => {
    const status = JSON.parse(e.data);
    for (const { root } of registry.values()) {
      if (status.valkey === "down") setStatus(root, "Valkey is unreachable right now; the widget will recover when it returns.", "down");
      // The server's own words (notifications off or restored, memory full), or "" when all is well.
      else if (typeof status.message === "string") setStatus(root, status.message, status.message ? "notice" : "");
      else setStatus(root, status.notifications === false ? "Keyspace notifications are off on this Valkey: the effects log stays empty." : "", "");
    }
  });
  source.addEventListener("room", (e) => followRoom(JSON.parse(e.data), { reconnect, reloadAll }));
  source.addEventListener("reset", () => {
    for (const { root } of registry.values()) {
      const text = "Your sandbox was reset by the instructor: the scenario starts again.";
      setStatus(root, text, "notice");
      announce(root, text);
    }
  });
  source.onerror = () => {
    // EventSource reconnects by itself; the server resends fresh snapshots.
    for (const { root } of registry.values()) {
      const status = $(root, "status");
      if (!status.textContent) setStatus(root, "Live stream interrupted; reconnecting…", "down");
    }
  };
  source.onopen = () => {
    for (const { root } of registry.values()) {
      const status = $(root, "status");
      if (status.dataset.kind === "down") setStatus(root, "");
    }
  };
}

/** A fresh stream: the server resolves again which sandbox this page acts in. */
export function reconnect() {
  if (source) source.close();
  source = null;
  openStream();
}

/** Every widget's state read again (and the room it comes from). The page may
 * now show another sandbox, whose versions do not follow this one's: forget
 * what was painted, so its first snapshot is painted whatever its version. */
export function reloadAll() {
  for (const [name, entry] of registry) {
    entry.last = null;
    entry.painted = null;
    entry.ready = load(name);
  }
}

export { $ };
