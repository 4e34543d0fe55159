// panels.js — the parts of a widget's panel every widget shares: the outcome
// box, the spoken announcements, the status line, the state sets, the raw key
// panel and the effects log. Each draws a snapshot (or a stream event) as the
// server sent it: the counts, members, values and words are Valkey's and the
// server's; what is marked "changed" is a comparison of two snapshots, not a
// number shown.

import { $, el, keyName, queueLabel, shortName } from "./cards.js";

// ---- the outcome, the announcements, the status ---------------------------

/** The widget's last outcome as Valkey keeps it, or none (after a reset).
 *  `tab` is this page's own name: an outcome another page caused says who. */
export function showOutcome(root, outcome, isNew, tab, sinceOpened = true) {
  const box = $(root, "outcome");
  delete box.dataset.stale;
  if (!outcome) {
    box.hidden = true;
    box.replaceChildren();
    return;
  }
  const mine = outcome.tab === tab;
  const who = mine ? "" : outcome.by === "instructor" ? "The instructor: "
    : outcome.name ? `${outcome.name}: ` : outcome.tab && sinceOpened ? "From another page of this sandbox: " : "";
  const parts = [];
  if (outcome.verdict) {
    const verdict = el("span", "verdict", outcome.verdict.text);
    verdict.dataset.right = outcome.verdict.right ? "1" : "0";
    parts.push(verdict, " ");
  }
  parts.push(el("span", "outcome-text", `${who}${outcome.text}`));
  box.hidden = false;
  box.replaceChildren(...parts);
  box.dataset.kind = outcome.kind;
  box.dataset.outcomeOf = outcome.action || "";
  if (isNew) announce(root, box.textContent);
  // The answer to this page's own click sits at the top of the panel; bring it into view if it is not.
  if (isNew && mine) requestAnimationFrame(() => bringIntoView(root, box));
}

function bringIntoView(root, box) {
  const r = box.getBoundingClientRect();
  const aside = root.closest(".dive-aside");
  const bottom = Math.min(window.innerHeight, aside ? aside.getBoundingClientRect().bottom : Infinity);
  if (r.top < 0 || r.bottom > bottom) box.scrollIntoView({ block: "center" });
}

export function announce(root, text) {
  const live = $(root, "announce");
  // A repeated sentence must still differ from the last one for a screen
  // reader to speak it again: alternate a trailing no-break space, at once
  // (no timer, so the widget is settled in the same frame as its paint).
  const flip = live.dataset.flip === "1" ? "0" : "1";
  live.dataset.flip = flip;
  live.textContent = flip === "1" ? `${text}\u00a0` : text;
}

export function setStatus(root, text, kind = "") {
  const status = $(root, "status");
  // only what changed is written: clearing a clear line is no change on the page
  if (status.textContent !== text) status.textContent = text;
  if ((status.dataset.kind || "") !== kind) status.dataset.kind = kind;
}

// ---- the state sets: pending, active, schedule, dead ------------------------

function setCell(name, now, old, marked) {
  const cell = el("div", `set set-${name}`);
  cell.append(el("dt", "", name));
  const dd = el("dd");
  dd.dataset.role = `set-${name}`;
  if (now.length === 0) dd.append(el("span", "set-empty", "empty"));
  for (const m of now) {
    const chip = el("span", "member", m);
    if (marked && !old.includes(m)) chip.classList.add("changed");
    dd.append(chip);
  }
  cell.append(dd);
  return cell;
}

export function renderSets(container, snapshot, previous) {
  if (!container) return;
  // each queue's state sets come in the snapshot, named and ordered by the server
  const before = new Map((previous ? previous.queues : []).map((q) => [q.queue, q.sets || {}]));
  const frag = document.createDocumentFragment();
  for (const q of snapshot.queues) {
    const old = before.get(q.queue) || {};
    const box = el("div", "sets-queue");
    box.append(el("p", "sets-title", `${queueLabel(q.queue)} · state sets`));
    const list = el("dl", "sets");
    for (const [name, now] of Object.entries(q.sets)) list.append(setCell(name, now, old[name] || [], Boolean(previous)));
    box.append(list);
    frag.append(box);
  }
  container.replaceChildren(frag);
}

// ---- the key panel ------------------------------------------------------

export function formatValue(key) {
  const v = key.value;
  // the server cuts a long value so a snapshot stays small: it says so, with the whole size
  const size = key.type === "string" ? `${key.size} bytes` : `${key.size} elements`;
  if (v === null) return `(${size}; not shown: this snapshot's budget is spent)`;
  const note = key.cut ? `\n… (${size} in all; the first shown)` : "";
  return formatWhole(key.type, v) + note;
}

function formatWhole(type, v) {
  switch (type) {
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

/** The names of the keys whose value differs between two snapshots. */
export function changedKeys(snapshot, previous) {
  if (!previous) return new Set();
  const before = keyIndex(previous);
  const changed = new Set();
  for (const [name, value] of keyIndex(snapshot)) if (before.get(name) !== value) changed.add(name);
  return changed;
}

function keyRow(body, key, changed) {
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

function keyTable(q, changed) {
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
    const cell = body.insertRow().insertCell();
    cell.colSpan = 3;
    cell.textContent = "no keys: Valkey holds nothing for this queue";
  }
  for (const key of q.keys) keyRow(body, key, changed);
  return table;
}

export function renderKeys(root, snapshot, changed) {
  const frag = document.createDocumentFragment();
  for (const q of snapshot.queues) frag.appendChild(keyTable(q, changed));
  $(root, "keys").replaceChildren(frag);
  const count = $(root, "raw-count");
  if (count) {
    // The total is the server's count; the changed rows are marked, not counted.
    const total = snapshot.key_count;
    const moved = changed.size ? ", the ones the last step changed marked" : "";
    count.textContent = `(${total} key${total === 1 ? "" : "s"}${moved})`;
  }
}

// ---- the effects log ----------------------------------------------------

// One formatter for every entry: toLocaleTimeString with options builds a
// new one per call, a third of a millisecond each, ten times per click.
const CLOCK = new Intl.DateTimeFormat([], { hour: "2-digit", minute: "2-digit", second: "2-digit", hour12: false });

function clock(seconds) {
  return CLOCK.format(new Date(seconds * 1000));
}

/** One keyspace notification, newest first; `several` queues name theirs. */
export function logEffect(root, effect, several) {
  const list = $(root, "effects");
  const item = el("li", "effect");
  item.title = effect.key;
  if (effect.at) item.append(el("time", "effect-time", clock(effect.at)));
  item.append(el("code", "effect-verb", effect.event));
  const where = several && effect.queue ? `${queueLabel(effect.queue)} ` : "";
  item.append(keyName(`${where}${shortName(effect.key)}`, "span", "effect-key"));
  // The words come with the event: the server says what the write did (server/live/effects.py).
  if (effect.words) item.append(el("span", "effect-words", effect.words));
  list.prepend(item);
  while (list.children.length > 40) list.lastChild.remove();
}
