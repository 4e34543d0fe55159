// lab.js — what every widget on a page shares: the API call, the one live
// stream, the key panel, the effects log and the spoken announcements.
// Nothing here computes a value to show: every number comes from a snapshot
// the server read from Valkey.

const registry = new Map(); // widget name -> { root, render }
let source = null;
let streamScheduled = false;

const $ = (root, role) => root.querySelector(`[data-role="${role}"]`);

export function register(name, render) {
  const root = document.querySelector(`[data-widget="${name}"]`);
  if (!root) return null;
  const entry = { root, render, last: null };
  registry.set(name, entry);
  root.querySelectorAll("button[data-action]").forEach((button) => {
    button.addEventListener("click", () => act(name, button.dataset.action));
  });
  entry.ready = load(name);
  if (!streamScheduled) {
    streamScheduled = true;
    // Open the stream once every module on the page has registered.
    setTimeout(openStream, 0);
  }
  return root;
}

async function load(name) {
  try {
    const response = await fetch(`/api/widgets/${name}/state`, { credentials: "same-origin" });
    const body = await response.json();
    if (!response.ok) return showProblem(name, body.error || response.statusText, response.status);
    paint(name, body.snapshot);
  } catch (err) {
    showProblem(name, "The site is unreachable; retrying.", 0);
    setTimeout(() => load(name), 1000);
  }
}

export async function act(name, action, body = {}) {
  const entry = registry.get(name);
  await entry.ready;
  entry.root.setAttribute("aria-busy", "true");
  try {
    const response = await fetch(`/api/widgets/${name}/${action}`, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify(body),
    });
    const data = await response.json();
    if (!response.ok) {
      showProblem(name, data.error || response.statusText, response.status);
      return null;
    }
    setStatus(entry.root, "");
    paint(name, data.snapshot);
    showOutcome(entry.root, data.outcome);
    return data;
  } catch (err) {
    showProblem(name, "The site is unreachable; retrying.", 0);
    return null;
  } finally {
    entry.root.removeAttribute("aria-busy");
  }
}

function showOutcome(root, outcome) {
  if (!outcome) return;
  const box = $(root, "outcome");
  box.hidden = false;
  box.textContent = outcome.text;
  box.dataset.kind = outcome.kind;
  announce(root, outcome.text);
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
  const previous = entry.last;
  entry.last = snapshot;
  $(entry.root, "readout").textContent = snapshot.readout || "";
  renderKeys($(entry.root, "keys"), snapshot, previous);
  entry.render(entry.root, snapshot, previous);
}

// ---- the key panel ------------------------------------------------------

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

function renderKeys(container, snapshot, previous) {
  const changed = changedKeys(snapshot, previous);
  const frag = document.createDocumentFragment();
  for (const q of snapshot.queues) {
    const table = document.createElement("table");
    table.className = "keys";
    const caption = table.createCaption();
    caption.textContent = `queue ${q.queue} · hash slot ${q.slot} · ${q.keys.length} keys`;
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
      if (changed.has(key.name)) row.classList.add("changed");
      const name = row.insertCell();
      name.className = "key-name";
      name.title = key.name;
      name.textContent = key.name;
      row.insertCell().textContent = key.type;
      const value = row.insertCell();
      value.className = "key-value";
      value.textContent = formatValue(key);
    }
    frag.appendChild(table);
  }
  container.replaceChildren(frag);
}

// ---- the live stream ----------------------------------------------------

function logEffect(root, effect) {
  const list = $(root, "effects");
  const item = document.createElement("li");
  const verb = document.createElement("code");
  verb.textContent = effect.event;
  item.append(verb, " ", shortName(effect.key));
  item.title = effect.key;
  list.prepend(item);
  while (list.children.length > 40) list.lastChild.remove();
}

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
    if (entry) logEffect(entry.root, effect);
  });
  source.addEventListener("status", (e) => {
    const status = JSON.parse(e.data);
    for (const { root } of registry.values()) {
      if (status.valkey === "down") setStatus(root, "Valkey is unreachable right now; the widget will recover when it returns.", "down");
      else setStatus(root, status.notifications === false ? "Keyspace notifications are off on this Valkey: the effects log stays empty." : "", "");
    }
  });
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

export { $ };
