// room.js — what a dive page shows of its class (or of a Watch): the banner,
// controls disabled where the page only watches, the class's events, the
// question asked (GET /room/ask) and notices that stay. The server decides all.

import { setStatus, withRole as el } from "./dom.js";

let current = null; // the last room the server named (null: none)
let notice = ""; // a sentence that outlives the room (e.g. the class was closed)
let watched = null; // whom an instructor's Watch shows: { sandbox, name, room }
let askedIn = null; // the class whose question was last read

const CONTROLS = "button, input, select, textarea";
// A notice that stays is cleared by Dismiss or an action on its widget, not by a click
// sent before it came or in its first seconds (not read yet), nor on another widget.
const NOTICE_READ_MS = 4000;
const CARRIED = "emqlab-class-notice"; // a notice carried to the page the class was brought to

const $ = (selector, root = document) => root.querySelector(selector);

function banner() {
  return $('[data-role="room-banner"]');
}

function words(room) {
  if (room.watching) {
    const who = watched && watched.sandbox === room.watching && watched.name ? `${watched.name}'s` : "a learner's";
    const where = watched && watched.room ? ` (class ${watched.room})` : "";
    return `You are watching ${who} sandbox${where}, read-only: the controls are disabled.`;
  }
  if (room.mode === "demo" && room.readonly) {
    return `Demo in class ${room.code}: you are watching the instructor's sandbox, read-only; the controls are disabled.`;
  }
  if (room.mode === "demo") return `Demo in class ${room.code}: every learner watches your sandbox, read-only.`;
  if (room.mode === "together") {
    return `You are in class ${room.code}, working together: everyone in it shares these keys and sees every action live.`;
  }
  return `You are in class ${room.code}: you act in your own sandbox; your instructor sees your progress.`;
}

function stopWatching() {
  const button = el("button", "Stop watching");
  button.type = "button";
  button.className = "room-stop";
  button.addEventListener("click", async () => {
    await fetch("/instructor/watch/stop", { method: "POST", credentials: "same-origin", headers: { Accept: "application/json" } });
    location.reload();
  });
  return button;
}

function drawBanner() {
  const node = banner();
  if (!node) return;
  const text = current ? words(current) : notice;
  node.hidden = !text;
  node.dataset.mode = current ? current.mode || "own" : "none";
  node.dataset.demo = current && current.mode === "demo" ? "1" : "0";
  node.replaceChildren(document.createTextNode(text));
  if (current && current.watching) node.append(" ", stopWatching());
}

async function nameWatched(sandbox) {
  try {
    const response = await fetch("/instructor/watching", { credentials: "same-origin" });
    if (response.ok) watched = await response.json();
  } catch (err) {
    return; // the banner keeps "a learner's"
  }
  if (current && current.watching === sandbox) drawBanner();
}

/** The room (or Watch) an answer came from: the banner and the controls follow it. */
export function showRoom(room) {
  current = room || null;
  drawBanner();
  if (current && current.watching && (!watched || watched.sandbox !== current.watching)) nameWatched(current.watching);
  for (const root of document.querySelectorAll("[data-widget]")) afterPaint(root);
  const code = current && !current.watching ? current.code : null;
  if (code !== askedIn) {
    askedIn = code;
    refreshAsk();
  }
}

/** After a widget drew itself: where the page only watches, its controls stay disabled. */
export function afterPaint(root) {
  const readonly = Boolean(current && current.readonly);
  root.toggleAttribute("data-readonly", readonly);
  // a disabled question must not say "answer, then press": here only the instructor presses
  for (const hint of root.querySelectorAll(".predict-hint")) {
    if (readonly && hint.dataset.pressHint === undefined) {
      hint.dataset.pressHint = hint.textContent;
      hint.textContent = current.watching
        ? "Read-only: you are watching, so nothing here is answered or pressed."
        : "Read-only in a demo: your instructor presses. When the class is asked, answer in the class's question box.";
    } else if (!readonly && hint.dataset.pressHint !== undefined) {
      hint.textContent = hint.dataset.pressHint;
      delete hint.dataset.pressHint;
    }
  }
  for (const control of root.querySelectorAll(CONTROLS)) {
    if (control.dataset.role === "dismiss") continue; // a notice can always be dismissed
    if (readonly && !control.disabled) {
      control.disabled = true;
      control.dataset.roomDisabled = "1";
    } else if (!readonly && control.dataset.roomDisabled) {
      control.disabled = false;
      delete control.dataset.roomDisabled;
    }
  }
}

// ---- notices that stay --------------------------------------------------

function dismiss(onClick) {
  const button = el("button", "Dismiss", "dismiss");
  button.type = "button";
  button.className = "notice-dismiss quiet";
  button.setAttribute("aria-label", "Dismiss this notice");
  button.addEventListener("click", onClick);
  return button;
}

/** A widget's notice that stays (an instructor's reset of the sandbox). */
export function stickyNotice(root, text) {
  const status = $('[data-role="status"]', root);
  status.replaceChildren(document.createTextNode(text), " ", dismiss(() => setStatus(root, "")));
  status.dataset.kind = "notice";
  status.dataset.since = String(Date.now());
}

/** Whether the widget's status line holds a notice that stays. */
export function keepsNotice(root) {
  return Boolean($('[data-role="status"] [data-role="dismiss"]', root));
}

function fresh(since, started) {
  return started < Number(since || 0) + NOTICE_READ_MS;
}

/** A click on `root` that started at `started` succeeded: what it settles. */
export function settleNotice(root, started) {
  const status = $('[data-role="status"]', root);
  if (!keepsNotice(root) || !fresh(status.dataset.since, started)) setStatus(root, "");
  const box = $('[data-role="class-notice"]');
  if (box && !box.hidden && box.dataset.concerns === root.dataset.widget && !fresh(box.dataset.since, started)) {
    box.hidden = true;
    box.replaceChildren();
  }
  if (askedWidget === root.dataset.widget) refreshAsk();
}

/** The element with `role` placed after the banner (made once): a class notice, the class's question. */
function besideBanner(tag, role, setup) {
  let box = $(`[data-role="${role}"]`);
  const node = banner();
  if (!box && node) {
    box = el(tag, undefined, role);
    setup(box);
    node.after(box);
  }
  return box;
}

function classNotice(text, widget = "") {
  const box = besideBanner("p", "class-notice", (b) => { b.className = "room-notice"; b.setAttribute("role", "status"); });
  if (!box) return;
  box.hidden = false;
  box.dataset.concerns = widget; // not data-widget: that names a widget's own root
  box.dataset.since = String(Date.now());
  box.replaceChildren(document.createTextNode(text), " ", dismiss(() => { box.hidden = true; box.replaceChildren(); }));
}

// A notice carried in the tab's session to the page the class was brought to (storage refused: none).
function carried() {
  try {
    const raw = sessionStorage.getItem(CARRIED);
    sessionStorage.removeItem(CARRIED);
    return raw ? JSON.parse(raw) : null;
  } catch (err) {
    return null;
  }
}

function carry(text, widget) {
  try { sessionStorage.setItem(CARRIED, JSON.stringify({ text, widget: widget || "" })); } catch (err) { /* none */ }
}

// ---- the question the class is asked ------------------------------------

let askedWidget = null;

function askBox() {
  return besideBanner("section", "class-ask", (b) => { b.className = "class-ask"; b.setAttribute("aria-label", "Your class's question"); });
}

function input(type, name, value) {
  const node = el("input");
  Object.assign(node, { type, name, value });
  return node;
}

function voteForm(ask, box) {
  const form = el("form", undefined, "class-vote");
  const set = el("fieldset");
  set.append(el("legend", `Your answer to: ${ask.legend}`));
  const choices = ask.kind === "choice" ? ask.choices : [{ value: "", label: "Your answer" }];
  for (const choice of choices) {
    const label = el("label");
    const field = ask.kind === "choice" ? input("radio", "class-vote", choice.value) : input("number", "class-vote", "");
    if (field.type === "number") field.step = "any";
    label.append(`${choice.label} `, field);
    set.append(label);
  }
  const send = el("button", "Send my answer");
  send.type = "submit";
  set.append(send);
  form.append(set);
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const picked = $('input[name="class-vote"]:checked, input[type="number"][name="class-vote"]', form);
    if (!picked || picked.value.trim() === "") return;
    const answer = picked.type === "number" ? Number(picked.value) : picked.value;
    const response = await fetch("/room/answer", { method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json" }, body: JSON.stringify({ answer }) });
    const data = await response.json();
    if (!response.ok) box.append(el("p", data.error || response.statusText, "class-ask-error"));
    else refreshAsk();
  });
  return form;
}

function list(title, role, lines) {
  const items = el("ul", undefined, role);
  for (const line of lines) items.append(el("li", line));
  return [el("p", title), items];
}

function drawAsk(ask) {
  askedWidget = ask ? ask.widget : null;
  const box = askBox();
  if (!box) return;
  box.hidden = !ask;
  if (!ask) return box.replaceChildren();
  const parts = [el("p", `Your class is asked${ask.round === 2 ? " again (second round)" : ""}: ${ask.legend}`, "class-ask-legend"),
    el("p", ask.answered, "class-ask-answered")];
  if (ask.mine) parts.push(el("p", ask.mine, "class-ask-mine"));
  if (ask.votes && !ask.revealed && ask.page === location.pathname) parts.push(voteForm(ask, box));
  if (ask.counts) parts.push(...list("How the class answered:", "class-ask-counts", ask.counts.map((c) => `${c.value}: ${c.count} (${c.mark})`)));
  if (ask.moved && ask.moved.length) {
    parts.push(...list("First vote → second vote:", "class-ask-moved", ask.moved.map((m) => `${m.value}: ${m.first} → ${m.second}`)));
  }
  box.replaceChildren(...parts);
}

async function refreshAsk() {
  if (!askedIn) return drawAsk(null);
  try {
    const response = await fetch("/room/ask", { credentials: "same-origin" });
    if (response.ok) drawAsk((await response.json()).ask);
  } catch (err) {
    // the site is away: the box keeps what it showed
  }
}

// ---- the class's events -------------------------------------------------

/** A `room` event on the stream: the class changed what this page shows. */
export function followRoom(event, { reconnect, reloadAll }) {
  if (event.action === "goto") {
    const here = !event.page || event.page === location.pathname;
    if (!here) {
      if (event.text) carry(event.text, event.widget);
      location.assign(event.widget ? `${event.page}#w-${event.widget}` : event.page);
      return;
    }
    if (event.text) classNotice(event.text, event.widget);
    const widget = event.widget && $(`[data-widget="${event.widget}"]`);
    if (widget) widget.scrollIntoView({ block: "start" });
    if (event.ask) refreshAsk();
    return;
  }
  if (["reveal", "pressed", "ask-ended"].includes(event.action)) return refreshAsk();
  notice = event.action === "closed" ? event.text || "" : "";
  if (event.action === "closed") current = null;
  const node = banner();
  if (node && event.text) {
    node.hidden = false;
    node.textContent = event.text;
  }
  // What this page acts in may have changed: a fresh stream and a fresh read
  // of every widget, both resolved by the server from the class's new state.
  reconnect();
  reloadAll();
}

const brought = carried();
if (brought && brought.text) {
  if (document.readyState === "loading") document.addEventListener("DOMContentLoaded", () => classNotice(brought.text, brought.widget));
  else classNotice(brought.text, brought.widget);
}
