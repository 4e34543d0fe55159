// lab.js — the API and the stream: a widget registers here, its buttons post
// their action (with this page's tab id in `X-Emqlab-Tab`), the one live
// stream (EventSource) brings every page of the sandbox the same snapshots,
// and each snapshot is painted once, in `ver` order. Nothing here computes a
// value to show: every number and every member comes from a snapshot the
// server read from Valkey. The panels (panels.js) and the cards (cards.js)
// draw it.

import { $ } from "./cards.js";
import { announce, changedKeys, logEffect, renderKeys, renderSets, setStatus, showOutcome } from "./panels.js";
import { afterPaint, followRoom, showRoom } from "./room.js";

const registry = new Map(); // widget name -> { root, render, last, before, changed, painted }
// This page's name for itself: an outcome caused by another page of the
// sandbox (another tab, a class member, the instructor) says so.
const TAB = Array.from({ length: 12 }, () => Math.floor(Math.random() * 36).toString(36)).join("");
let source = null;
let streamNames = ""; // the widgets the open stream follows
let hashWatched = false;
// The stream opens once every widget of the page has registered. The browser
// runs all the page's module scripts before DOMContentLoaded, but it may run
// a timer between two of them while the next one still loads: a stream
// opened from a timer could leave out the widgets registered after it (their
// snapshots would never come). A widget that registers after DOMContentLoaded
// (none does today) reopens the stream to be included.
let domReady = document.readyState === "complete";
if (!domReady) {
  document.addEventListener("DOMContentLoaded", () => { domReady = true; openStream(); }, { once: true });
}

// Extensions (predict.js): each may add fields to an action's body
// (`body(name, action, root)`), and sees every snapshot painted
// (`paint(name, root, snapshot)`) and every action's answer (`acted(name, root, data)`).
export const extensions = [];

// `bodyFor(action)`, when given, is the body a button's action sends (e.g. the
// child a learner picked); without it every button sends an empty body.
export function register(name, render, bodyFor = null) {
  const root = document.querySelector(`[data-widget="${name}"]`);
  if (!root) return null;
  const entry = { root, render, last: null, before: null, changed: new Set(), painted: null, holds: 0, held: [] };
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
  if (domReady) {
    if (source && !streamNames.split(",").includes(name)) reconnect();
    else openStream();
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

// An answer slower than this dims the widget while it waits, and lets the
// stream's frames for it through (see `hold`). A quick one (most are) is
// drawn without dimming first: dimming and undimming repaint the whole
// widget twice, which cost a click a third of its time to settled.
const SLOW_MS = 300;

// While this page's own action on a widget is in flight, the stream's frames
// for that widget wait (at most SLOW_MS), then follow the answer in the same
// task: the answer's snapshot paints, the effects log appends, and a
// snapshot the answer already showed is dropped by `paint`. Without the
// wait, the stream's copy of the same change often came first, so the page
// drew it, laid it out, and then took the answer (a second change, a second
// layout) several milliseconds later. Returns the function that lets go once.
function hold(entry) {
  entry.holds += 1;
  let holding = true;
  return () => {
    if (!holding) return;
    holding = false;
    entry.holds -= 1;
    if (entry.holds > 0) return;
    const frames = entry.held;
    entry.held = [];
    for (const frame of frames) {
      // one frame that fails to draw must not cost the others (the newest snapshot may come last)
      try {
        frame(entry);
      } catch (err) {
        console.error(err);
      }
    }
  };
}

/** A stream frame for widget `name`: applied now, or after the page's own answer. */
function fromStream(name, frame) {
  const entry = registry.get(name);
  if (!entry) return;
  if (entry.holds > 0) entry.held.push(frame);
  else frame(entry);
}

export async function act(name, action, body = {}) {
  const entry = registry.get(name);
  await entry.ready;
  // for assistive technology at once; no style depends on it (widgets.css)
  entry.root.setAttribute("aria-busy", "true");
  const letGo = hold(entry);
  const slow = setTimeout(() => {
    entry.root.classList.add("is-waiting");
    letGo();
  }, SLOW_MS);
  try {
    const extra = extensions.map((x) => (x.body ? x.body(name, action, entry.root) : {}));
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
    clearTimeout(slow);
    // classList.remove rewrites the attribute even when the class is absent
    if (entry.root.classList.contains("is-waiting")) entry.root.classList.remove("is-waiting");
    entry.root.removeAttribute("aria-busy");
    letGo(); // the frames that came meanwhile, drawn after the answer in this same task
  }
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
  showOutcome(entry.root, snapshot.outcome, isNew && snapshot.outcome !== null, TAB);
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

// ---- the live stream ----------------------------------------------------

function openStream() {
  if (source || registry.size === 0) return;
  const names = [...registry.keys()].join(",");
  streamNames = names;
  source = new EventSource(`/api/stream?widgets=${encodeURIComponent(names)}`);
  source.addEventListener("snapshot", (e) => {
    const snapshot = JSON.parse(e.data);
    fromStream(snapshot.widget, () => paint(snapshot.widget, snapshot));
  });
  source.addEventListener("effect", (e) => {
    const effect = JSON.parse(e.data);
    fromStream(effect.widget, (entry) => logEffect(entry.root, effect, Boolean(entry.last && entry.last.queues.length > 1)));
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
