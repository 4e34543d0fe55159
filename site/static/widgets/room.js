// room.js — what a page shows of its class (or of a Watch): the banner,
// controls disabled where the page only watches, the class's events, the
// question asked (GET /room/ask) and notices that stay. The server decides all.

import { $, el, getJSON, post, setStatus } from "./dom.js";

let current = null; // the last room the server named (null: none)
let notice = ""; // a sentence that outlives the room (e.g. the class was closed)
let watched = null; // whom an instructor's Watch shows: { sandbox, name, room }
let askedIn = null; // the class whose question was last read
let askedWidget = null; // the widget that question is about

// A notice that stays is cleared by Dismiss or an action on its widget, not by a click
// sent before it came or in its first seconds (not read yet), nor on another widget.
const NOTICE_READ_MS = 4000;
const CARRIED = "emqlab-class-notice"; // a notice carried to the page the class was brought to

const banner = () => $(document, "room-banner");

function words(room) {
  if (room.watching) {
    const who = watched && watched.sandbox === room.watching && watched.name ? `${watched.name}'s` : "a learner's";
    const where = watched && watched.room ? ` (class ${watched.room})` : "";
    return `You are watching ${who} sandbox${where}, read-only: the controls are disabled.`;
  }
  const demo = room.readonly ? "you are watching the instructor's sandbox, read-only; the controls are disabled"
    : "every learner watches your sandbox, read-only";
  if (room.mode === "demo") return `Demo in class ${room.code}: ${demo}.`;
  if (room.mode === "together") {
    return `You are in class ${room.code}, working together: `
      + "everyone in it shares these keys and sees every action live.";
  }
  return `You are in class ${room.code}: you act in your own sandbox; your instructor sees your progress.`;
}

async function stopWatching() {
  await post("/instructor/watch/stop", {}, { Accept: "application/json" });
  location.reload();
}

function drawBanner() {
  const node = banner();
  if (!node) return;
  const text = current ? words(current) : notice;
  node.hidden = !text;
  node.dataset.demo = current && current.mode === "demo" ? "1" : "0";
  node.replaceChildren(text);
  if (current && current.watching) {
    node.append(" ", el("button", { type: "button", class: "room-stop", onclick: stopWatching }, "Stop watching"));
  }
}

async function nameWatched(sandbox) {
  watched = (await getJSON("/instructor/watching")) || watched; // none: the banner keeps "a learner's"
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
  for (const control of root.querySelectorAll("button, input, select, textarea")) {
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

function dismiss(onclick) {
  return el("button", { type: "button", class: "notice-dismiss quiet", "data-role": "dismiss",
    "aria-label": "Dismiss this notice", onclick }, "Dismiss");
}

/** A widget's notice that stays (an instructor's reset of the sandbox). */
export function stickyNotice(root, text) {
  const status = $(root, "status");
  status.replaceChildren(text, " ", dismiss(() => setStatus(root, "")));
  status.dataset.kind = "notice";
  status.dataset.since = String(Date.now());
}

/** Whether the widget's status line holds a notice that stays. */
export function keepsNotice(root) {
  return Boolean($($(root, "status"), "dismiss"));
}

function fresh(since, started) {
  return started < Number(since || 0) + NOTICE_READ_MS;
}

/** A click on `root` that started at `started` succeeded: what it settles. */
export function settleNotice(root, started) {
  if (!keepsNotice(root) || !fresh($(root, "status").dataset.since, started)) setStatus(root, "");
  const box = $(document, "class-notice");
  if (box && !box.hidden && box.dataset.concerns === root.dataset.widget && !fresh(box.dataset.since, started)) {
    box.hidden = true;
    box.replaceChildren();
  }
  if (askedWidget === root.dataset.widget) refreshAsk();
}

/** The element with `role` placed after the banner (made once): a class notice, the class's question. */
function besideBanner(tag, role, attrs) {
  let box = $(document, role);
  const node = banner();
  if (!box && node) {
    box = el(tag, { "data-role": role, ...attrs });
    node.after(box);
  }
  return box;
}

function classNotice(text, widget = "") {
  const box = besideBanner("p", "class-notice", { class: "room-notice", role: "status" });
  if (!box) return;
  box.hidden = false;
  box.dataset.concerns = widget; // not data-widget: that names a widget's own root
  box.dataset.since = String(Date.now());
  box.replaceChildren(text, " ", dismiss(() => { box.hidden = true; box.replaceChildren(); }));
}

// A notice carried in the tab's session to the page the class was brought to (storage refused: none).
function carry(text, widget) {
  try { sessionStorage.setItem(CARRIED, JSON.stringify({ text, widget: widget || "" })); } catch (err) { /* none */ }
}

// ---- the question the class is asked ------------------------------------

function voteForm(ask, box) {
  const field = ask.kind === "choice" ? { type: "radio" } : { type: "number", step: "any" };
  const choices = ask.kind === "choice" ? ask.choices : [{ value: "", label: "Your answer" }];
  const labels = choices.map((choice) => el("label", {}, `${choice.label} `,
    el("input", { ...field, name: "class-vote", value: choice.value })));
  const form = el("form", { "data-role": "class-vote" }, el("fieldset", {},
    el("legend", {}, `Your answer to: ${ask.legend}`), ...labels, el("button", { type: "submit" }, "Send my answer")));
  form.onsubmit = async (event) => {
    event.preventDefault();
    const picked = form.querySelector('input[name="class-vote"]:checked, input[type="number"][name="class-vote"]');
    if (!picked || picked.value.trim() === "") return;
    const answer = picked.type === "number" ? Number(picked.value) : picked.value;
    const response = await post("/room/answer", { answer });
    const data = await response.json();
    if (!response.ok) box.append(el("p", { "data-role": "class-ask-error" }, data.error || response.statusText));
    else refreshAsk();
  };
  return form;
}

function list(title, role, lines) {
  return [el("p", {}, title), el("ul", { "data-role": role }, ...lines.map((line) => el("li", {}, line)))];
}

function drawAsk(ask) {
  askedWidget = ask ? ask.widget : null;
  const box = besideBanner("section", "class-ask", { class: "class-ask", "aria-label": "Your class's question" });
  if (!box) return;
  box.hidden = !ask;
  if (!ask) return box.replaceChildren();
  const said = (text, role) => el("p", { "data-role": role }, text);
  const again = ask.round === 2 ? " again (second round)" : "";
  const parts = [said(`Your class is asked${again}: ${ask.legend}`, "class-ask-legend"),
    said(ask.answered, "class-ask-answered")];
  if (ask.mine) parts.push(said(ask.mine, "class-ask-mine"));
  if (ask.votes && !ask.revealed && ask.page === location.pathname) parts.push(voteForm(ask, box));
  const counts = (ask.counts || []).map((c) => `${c.value}: ${c.count} (${c.mark})`);
  const moved = (ask.moved || []).map((m) => `${m.value}: ${m.first} → ${m.second}`);
  if (ask.counts) parts.push(...list("How the class answered:", "class-ask-counts", counts));
  if (moved.length) parts.push(...list("First vote → second vote:", "class-ask-moved", moved));
  box.replaceChildren(...parts);
}

async function refreshAsk() {
  if (!askedIn || !banner()) return drawAsk(null); // no banner (a page without widgets): no box to fill
  const data = await getJSON("/room/ask");
  if (data) drawAsk(data.ask);
}

// ---- the class's events -------------------------------------------------

/** A `room` event on the stream: the class changed what this page shows; `again` reads what it acts in afresh. */
export function followRoom(event, again) {
  if (event.action === "goto") {
    const here = !event.page || event.page === location.pathname;
    if (!here) {
      if (event.text) carry(event.text, event.widget);
      location.assign(event.widget ? `${event.page}#w-${event.widget}` : event.page);
      return;
    }
    if (event.text) classNotice(event.text, event.widget);
    const widget = event.widget && document.querySelector(`[data-widget="${event.widget}"]`);
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
  again();
}

try { // a module runs once the document is parsed: the banner is there
  const brought = JSON.parse(sessionStorage.getItem(CARRIED) || "null");
  sessionStorage.removeItem(CARRIED);
  if (brought && brought.text) classNotice(brought.text, brought.widget);
} catch (err) { /* none carried, or storage refused */ }
