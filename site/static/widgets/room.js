// room.js — what a dive page shows of the class it is in (or of a Watch):
// the banner, the controls disabled where the page only watches, and the
// class's events (a mode change, "bring everyone", a close). The server says
// which class and mode every answer comes from; nothing here decides it.

let current = null; // the last room the server named (null: none)
let notice = ""; // a sentence that outlives the room (e.g. the class was closed)

const CONTROLS = "button, input, select, textarea";

function banner() {
  return document.querySelector('[data-role="room-banner"]');
}

function words(room) {
  if (room.watching) return "You are watching a learner's sandbox, read-only: the controls are disabled.";
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
  const button = document.createElement("button");
  button.type = "button";
  button.className = "room-stop";
  button.textContent = "Stop watching";
  button.addEventListener("click", async () => {
    await fetch("/instructor/watch/stop", { method: "POST", credentials: "same-origin", headers: { Accept: "application/json" } });
    location.reload();
  });
  return button;
}

/** The room (or Watch) an answer came from: the banner and the controls follow it. */
export function showRoom(room) {
  current = room || null;
  const node = banner();
  if (node) {
    const text = current ? words(current) : notice;
    node.hidden = !text;
    node.dataset.mode = current ? current.mode || "own" : "none";
    node.dataset.demo = current && current.mode === "demo" ? "1" : "0";
    node.replaceChildren(document.createTextNode(text));
    if (current && current.watching) node.append(" ", stopWatching());
  }
  for (const root of document.querySelectorAll("[data-widget]")) afterPaint(root);
}

/** After a widget drew itself: where the page only watches, its controls stay disabled. */
export function afterPaint(root) {
  const readonly = Boolean(current && current.readonly);
  root.toggleAttribute("data-readonly", readonly);
  for (const control of root.querySelectorAll(CONTROLS)) {
    if (readonly && !control.disabled) {
      control.disabled = true;
      control.dataset.roomDisabled = "1";
    } else if (!readonly && control.dataset.roomDisabled) {
      control.disabled = false;
      delete control.dataset.roomDisabled;
    }
  }
}

/** A `room` event on the stream: the class changed what this page shows. */
export function followRoom(event, { reconnect, reloadAll }) {
  if (event.action === "goto") {
    if (event.page && event.page !== location.pathname) location.assign(event.page);
    return;
  }
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
