// room.js — what a page shows of its class (or of a Watch): the banner and the class's question, drawn
// by the server (`_class_box.html`: the first paint and GET /room/ask as HTML, morphed in when the room
// changes), controls disabled where the page only watches (the banner says so, with the words its questions
// show instead), the class's events and notices that stay.

import { Idiomorph } from "/static/vendor/idiomorph/dist/idiomorph.esm.js";
import { $, announce, el, post, setStatus } from "./dom.js";

let drawnFor = "null"; // the room the banner and the question were last fetched for: another fetches them
let drawing = null; // the fetch in flight: one at a time, the newest drawn last
let redo = false; // a change came while fetching: fetch once more

// A notice that stays is cleared by Dismiss or an action on its widget, not by a click
// sent before it came or in its first seconds (not read yet), nor on another widget.
const NOTICE_READ_MS = 4000;
const CARRIED = "emqlab-class-notice"; // a notice carried to the page the class was brought to

const banner = () => $(document, "room-banner");
// what the reader typed or picked in the vote form is theirs, not the server's
const KEEP = {
  beforeAttributeUpdated: (name, node) => !(node.tagName === "INPUT" && ["value", "checked"].includes(name)),
};

async function drawOnce() {
  const page = encodeURIComponent(location.pathname);
  const response = await fetch(`/room/ask?page=${page}`, { headers: { Accept: "text/html" } });
  if (!response.ok) return; // refused or away: the page keeps what it shows
  const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
  for (const role of ["room-banner", "class-ask"]) {
    const [was, now] = [$(document, role), $(fresh, role)];
    if (was && now) Idiomorph.morph(was, now, { callbacks: KEEP });
  }
  for (const root of document.querySelectorAll("[data-widget]")) afterPaint(root);
}

/** The server's drawing of the banner and the class's question, fetched and morphed in (no banner: none). */
function refreshRoom() {
  if (!banner()) return;
  if (drawing) { redo = true; return; }
  drawing = (async () => {
    do { redo = false; await drawOnce(); } while (redo);
  })().catch(() => {}).finally(() => { drawing = null; }); // away: the next change fetches again
}

/** The room (or Watch) an answer came from: the banner and the controls follow it. */
export function showRoom(room) {
  const shown = JSON.stringify(room || null);
  if (shown !== drawnFor) {
    drawnFor = shown;
    refreshRoom();
  }
}

/** After a widget or the banner drew itself: where the page only watches (the banner's `data-readonly`),
 *  its controls stay disabled and its questions say the banner's words, not "answer, then press". */
export function afterPaint(root) {
  const said = banner()?.dataset.readonly; // undefined: the page acts
  for (const hint of root.querySelectorAll(".predict-hint")) {
    if (said && hint.dataset.pressHint === undefined) {
      hint.dataset.pressHint = hint.textContent;
      hint.textContent = said;
    } else if (!said && hint.dataset.pressHint !== undefined) {
      hint.textContent = hint.dataset.pressHint;
      delete hint.dataset.pressHint;
    }
  }
  for (const control of root.querySelectorAll("button, input, select, textarea")) {
    if (control.dataset.role === "dismiss") continue; // a notice can always be dismissed
    if (said && !control.disabled) {
      control.disabled = true;
      control.dataset.roomDisabled = "1";
    } else if (!said && control.dataset.roomDisabled) {
      control.disabled = false;
      delete control.dataset.roomDisabled;
    }
  }
}

// ---- notices that stay, as the server drew them (widgets/_notice.html) ----

/** A widget's notice that stays (a reset of the sandbox), said aloud. */
export function stickyNotice(root, html) {
  const status = $(root, "status");
  status.innerHTML = html;
  status.dataset.kind = "notice";
  status.dataset.since = String(Date.now());
  announce(root, $(status, "notice-text").textContent);
}

document.addEventListener("click", (event) => { // a notice's Dismiss
  const box = event.target.closest('[data-role="dismiss"]')?.parentElement;
  if (!box) return;
  box.replaceChildren();
  box.dataset.kind = "";
  box.hidden = box.dataset.role === "class-notice";
});

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
  if ($(document, "class-ask")?.dataset.asks === root.dataset.widget) refreshRoom();
}

/** The class's notice (its place drawn after the banner, _class_box.html), as the server drew the event's. */
function classNotice(html, widget = "") {
  const box = $(document, "class-notice");
  if (!box) return;
  box.hidden = false;
  box.dataset.concerns = widget; // not data-widget: that names a widget's own root
  box.dataset.since = String(Date.now());
  box.innerHTML = html;
}

// A notice carried in the tab's session to the page the class was brought to (storage refused: none).
function carry(html, widget) {
  try { sessionStorage.setItem(CARRIED, JSON.stringify({ html, widget: widget || "" })); } catch (err) { /* none */ }
}

// ---- the forms the server drew: a vote, Stop watching (without JavaScript, their posts answer a page) ----

async function vote(form) {
  const box = $(document, "class-ask");
  const response = await fetch(form.action, { method: "POST", body: new URLSearchParams(new FormData(form)),
    headers: { Accept: "application/json" } });
  const data = await response.json();
  if (!response.ok) {
    const said = el("p", { "data-role": "class-ask-error" }, data.error || response.statusText);
    const before = box.querySelector('[data-role="class-ask-error"]'); // a second refusal replaces the first
    if (before) before.replaceWith(said); else box.append(said);
  } else refreshRoom();
}

document.addEventListener("submit", async (event) => {
  const role = event.target.dataset.role;
  if (role !== "class-vote" && role !== "room-stop") return;
  event.preventDefault();
  if (role === "class-vote") return vote(event.target);
  await post("/instructor/watch/stop", {}, { Accept: "application/json" });
  location.reload();
});

// ---- the class's events -------------------------------------------------

/** A `room` event on the stream: the class changed what this page shows; `again` reads what it acts in afresh. */
export function followRoom(event, again) {
  if (event.action === "goto") {
    const here = !event.page || event.page === location.pathname;
    if (!here) {
      if (event.html) carry(event.html, event.widget);
      location.assign(event.widget ? `${event.page}#w-${event.widget}` : event.page);
      return;
    }
    if (event.html) classNotice(event.html, event.widget);
    const widget = event.widget && document.querySelector(`[data-widget="${event.widget}"]`);
    if (widget) widget.scrollIntoView({ block: "start" });
    if (event.ask) refreshRoom();
    return;
  }
  if (["reveal", "pressed", "ask-ended"].includes(event.action)) return refreshRoom();
  // the class changed what this page acts in: the stream's "where" brings the banner's new drawing
  again();
}

try { // a module runs once the document is parsed: the banner is there
  const brought = JSON.parse(sessionStorage.getItem(CARRIED) || "null");
  sessionStorage.removeItem(CARRIED);
  if (brought && brought.html) classNotice(brought.html, brought.widget);
} catch (err) { /* none carried, or storage refused */ }
