// lab.js — the API and the stream, one paint path.
//
// A widget registers here. Its buttons post their action; the answer says
// only whether it ran (and the learner's progress). What the widget shows is
// painted from one source: the snapshots the server reads from Valkey — the
// first from GET …/state, then every one the live stream (EventSource) sends
// to every page of the sandbox, the page that clicked included. A snapshot
// carries `ver` (the server's clock at the widget's last action); a page
// never paints a snapshot older than the one it shows. Nothing here computes
// a value to show.

import { $ } from "./cards.js";
import { announce, changedKeys, logEffect, renderKeys, renderSets, setStatus, showOutcome } from "./panels.js";
import { afterPaint, followRoom, keepsNotice, settleNotice, showRoom, stickyNotice } from "./room.js";

const registry = new Map(); // widget name -> { root, render, last, before, changed }
// This page's name for itself: an outcome caused by another page says so.
const TAB = Array.from({ length: 12 }, () => Math.floor(Math.random() * 36).toString(36)).join("");
// When the stream has not brought an action's snapshot this long after its
// answer (the stream is reconnecting, notifications are off), read it.
const CATCH_UP_MS = 1500;
let source = null;
let streamNames = "";
let hashWatched = false;
let domReady = document.readyState === "complete";
if (!domReady) {
  document.addEventListener("DOMContentLoaded", () => { domReady = true; openStream(); }, { once: true });
}

// Extensions (predict.js): each may add fields to an action's body
// (`body(name, action, root)`), and sees every snapshot painted
// (`paint(name, root, snapshot)`) and every action's answer (`acted(name, root, data)`).
export const extensions = [];

export function register(name, render, bodyFor = null) {
  const root = document.querySelector(`[data-widget="${name}"]`);
  if (!root) return null;
  const entry = { root, render, last: null, before: null, changed: new Set() };
  registry.set(name, entry);
  // Live from here on: the controls show, the recorded trace folds away.
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
  if (step === null) return;
  // The server resets the widget and replays its tour to that step on Valkey.
  act(name, "goto", { step }).then(() => {
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
  entry.root.setAttribute("aria-busy", "true"); // for assistive technology; no style depends on it
  const started = Date.now(); // a notice that came after this click is not settled by it (room.js)
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
    settleNotice(entry.root, started);
    showRoom(data.room);
    for (const x of extensions) if (x.acted) x.acted(name, entry.root, data);
    // The snapshot of this action comes by the stream, as to every page; if
    // the stream is slow to bring it, read it.
    setTimeout(() => { if (!entry.last || entry.last.ver < data.ver) entry.ready = load(name); }, CATCH_UP_MS);
    return data;
  } catch (err) {
    showProblem(name, "The site is unreachable; retrying.", 0);
    return null;
  } finally {
    entry.root.removeAttribute("aria-busy");
  }
}

function showProblem(name, message, status) {
  const entry = registry.get(name);
  if (!entry) return;
  const kind = status === 503 || status === 0 ? "down" : "error";
  setStatus(entry.root, message, kind);
  // the last outcome is not this press's: it stays, marked as the one before
  $(entry.root, "outcome").dataset.stale = "1";
  announce(entry.root, message);
}

function paint(name, snapshot) {
  const entry = registry.get(name);
  if (!entry || !snapshot) return;
  // One truth: a snapshot older than the one on the page is never painted.
  if (entry.last && snapshot.ver < entry.last.ver) return;
  entry.root.dataset.ver = String(snapshot.ver);
  const isNew = !entry.last || snapshot.ver !== entry.last.ver;
  // an outcome recorded before this page opened is nobody else's news: not "from another page"
  if (entry.openedAt === undefined) entry.openedAt = snapshot.ver;
  showOutcome(entry.root, snapshot.outcome, isNew && snapshot.outcome !== null && entry.last !== null, TAB,
    snapshot.ver > entry.openedAt);
  const same = entry.last !== null && JSON.stringify(entry.last.queues) === JSON.stringify(snapshot.queues);
  if (!same) {
    entry.before = entry.last;
    entry.changed = changedKeys(snapshot, entry.last);
  }
  const previous = same ? entry.before : entry.last;
  entry.last = snapshot;
  $(entry.root, "readout").textContent = snapshot.problem || snapshot.readout || "";
  renderKeys(entry.root, snapshot, entry.changed);
  renderSets($(entry.root, "sets"), snapshot, previous);
  if (snapshot.picture) entry.render(entry.root, snapshot, previous);
  else $(entry.root, "picture").replaceChildren();
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
    paint(snapshot.widget, snapshot);
  });
  source.addEventListener("effect", (e) => {
    const effect = JSON.parse(e.data);
    const entry = registry.get(effect.widget);
    if (entry) logEffect(entry.root, effect, Boolean(entry.last && entry.last.queues.length > 1));
  });
  source.addEventListener("status", (e) => {
    const status = JSON.parse(e.data);
    for (const { root } of registry.values()) {
      if (status.valkey === "down") setStatus(root, "Valkey is unreachable right now; the widget will recover when it returns.", "down");
      else if (typeof status.message === "string" && (status.message || !keepsNotice(root))) {
        setStatus(root, status.message, status.message ? "notice" : "");
      }
    }
  });
  source.addEventListener("room", (e) => followRoom(JSON.parse(e.data), { reconnect, reloadAll }));
  source.addEventListener("reset", (e) => {
    const data = JSON.parse(e.data);
    const text = data.by === "learner" ? "You started over: every scenario lands again."
      : "Your sandbox was reset by the instructor: the scenario starts again.";
    // a notice that stays until the learner dismisses it or acts on the widget (room.js)
    for (const { root } of registry.values()) stickyNotice(root, text);
    for (const { root } of registry.values()) announce(root, text);
  });
  source.onerror = () => {
    for (const { root } of registry.values()) {
      if (!$(root, "status").textContent) setStatus(root, "Live stream interrupted; reconnecting…", "down");
    }
  };
  source.onopen = () => {
    for (const { root } of registry.values()) {
      if ($(root, "status").dataset.kind === "down") setStatus(root, "");
    }
  };
}

/** A fresh stream: the server resolves again which sandbox this page acts in. */
export function reconnect() {
  if (source) source.close();
  source = null;
  openStream();
}

/** Every widget read again; the page may now show another sandbox, whose
 * versions do not follow this one's: forget what was painted. */
export function reloadAll() {
  for (const [name, entry] of registry) {
    entry.last = null;
    entry.openedAt = undefined;
    entry.ready = load(name);
  }
}
