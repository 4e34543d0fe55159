// lab.js — the generic swap and the actions, for every widget on the page.
// The server draws every frame (first paint, no-JS page, live stream: the same
// HTML); this page morphs a newer `ver` in (idiomorph), keeping the reader's
// focus, typed values, open details and scroll. `data-action`/`data-send` name
// a control's action; `data-body`, `[data-field][data-for~=<action>]` and an
// open question's answer fill its body. Nothing here computes a value to show.
// A page without widgets loads it too, for a class's learner: it follows the class.

import { Idiomorph } from "/static/vendor/idiomorph/dist/idiomorph.esm.js";
import { $, announce, getJSON, post, setStatus } from "./dom.js";
import { afterPaint, followRoom, keepsNotice, settleNotice, showRoom, stickyNotice } from "./room.js";

// This page's name for itself: an outcome another page caused says so.
const TAB = Array.from({ length: 12 }, () => Math.floor(Math.random() * 36).toString(36)).join("");
// When the stream has not brought an action's frame this long after its answer
// (reconnecting, notifications off), the stream is opened afresh (it sends every widget).
const CATCH_UP_MS = 1500;
const widgets = new Map(); // name -> { root, ver, openedAt }
let source = null;

// ---- the swap ---------------------------------------------------------------

// Fields the morph turns into another field (it reuses a node without an id for a
// new one: policy radios once became a question's, keeping "fp" checked). What was
// typed belongs to its own field, so a field that is not the same takes the server's.
const adopted = new WeakSet();

/** An option, a radio or a checkbox: its value is the server's, whether it is picked is the reader's. */
const isChoice = (node) => node.tagName === "OPTION" || ["radio", "checkbox"].includes(node.getAttribute("type"));

/** A field's identity: its id, else its name; a choice's value is part of it. */
function fieldOf(node) {
  if (node.nodeType !== 1 || !["INPUT", "TEXTAREA", "SELECT", "OPTION"].includes(node.tagName)) return null;
  const own = node.getAttribute("id") || node.getAttribute("name") || "";
  return isChoice(node) ? `${own}=${node.getAttribute("value")}` : own;
}

const KEEP = {
  beforeNodeMorphed: (node, fresh) => {
    // the announcement and the status line are this page's own (written below and by room.js)
    if (node.nodeType === 1 && node.hasAttribute("data-keep")) return false;
    const field = fieldOf(node);
    if (field !== null && field !== fieldOf(fresh)) adopted.add(node);
    return true;
  },
  afterNodeMorphed: (node) => { adopted.delete(node); },
  beforeAttributeUpdated: (name, node) => {
    if (name === "open" && node.tagName === "DETAILS") return false; // the reader opened or closed it
    if (name === "data-room-disabled") return false;
    if (adopted.has(node)) return true;
    // what the reader typed or picked in a question, a form, a picker
    const typed = name === "selected" || name === "checked" || (name === "value" && !isChoice(node));
    return !(typed && node.closest("[data-reader]"));
  },
};

function verOf(node) {
  return node.hasAttribute("data-ver") ? Number(node.dataset.ver) : null;
}

/** Morph the server's drawing of a widget in, unless the page shows a newer `ver`. */
function swap(html) {
  const holder = document.createElement("template");
  holder.innerHTML = html;
  const fresh = holder.content.querySelector("section[data-widget]");
  const entry = fresh && widgets.get(fresh.dataset.widget);
  const ver = fresh && verOf(fresh);
  if (!entry || ver === null) return;
  // one truth: never an older state over a newer one. A first visit's page is drawn from the
  // specimen at ver 0 (server/widgets/specimen.py): the visitor's own first frame always replaces it.
  if (entry.ver !== null && ver < entry.ver) return;
  const isNew = entry.ver !== null && ver !== entry.ver;
  const progress = () => $(entry.root, "widget-progress")?.textContent;
  const progressWas = progress();
  Idiomorph.morph(entry.root, Array.from(fresh.childNodes), { morphStyle: "innerHTML", callbacks: KEEP });
  entry.ver = ver;
  entry.root.dataset.ver = String(ver);
  settled(entry, isNew);
  // the learner's record moved (a step reached, a prediction judged, on this page or
  // another of the sandbox): the dive's own progress line is read afresh from the server
  if (progress() !== progressWas) refreshDive();
}

/** What depends on this page: whose outcome it is, what to say aloud, the room's read-only controls. */
function settled(entry, isNew) {
  const { root } = entry;
  if (entry.openedAt === null) entry.openedAt = entry.ver;
  const who = root.querySelector(".outcome-who");
  const mine = Boolean(who && who.dataset.tab === TAB);
  // an outcome recorded before this page opened is nobody else's news: not "from another page"
  // who acted, when it was not this page (the server draws the words; this page knows whether they apply)
  const told = mine || (who && who.dataset.who === "page" && !(entry.ver > entry.openedAt));
  if (who) who.textContent = told ? "" : who.dataset.said;
  const box = $(root, "outcome");
  if (isNew && !box.hidden) {
    announce(root, box.textContent.trim());
    // this page's own outcome is brought into view when it is out of it (or below its aside's end)
    if (mine) requestAnimationFrame(() => {
      const r = box.getBoundingClientRect();
      const aside = root.closest(".dive-aside");
      const bottom = Math.min(window.innerHeight, aside ? aside.getBoundingClientRect().bottom : Infinity);
      if (r.top < 0 || r.bottom > bottom) box.scrollIntoView({ block: "center" });
    });
  }
  afterPaint(root);
}

// ---- actions ------------------------------------------------------------

function bodyFor(root, action, control) {
  const body = control && control.dataset.body ? JSON.parse(control.dataset.body) : {};
  for (const field of root.querySelectorAll(`[data-field][data-for~="${action}"]`)) {
    // `data-kind` says how a field's value travels: "number", "flag" (a checkbox's
    // checked), "list" (the values of the checked boxes sharing the field); else text
    const { field: key, kind } = field.dataset;
    if (kind === "list") body[key] = [...(body[key] || []), ...(field.checked ? [field.value] : [])];
    else if (kind === "flag") body[key] = field.checked;
    else if (field.value) body[key] = kind === "number" ? Number(field.value) : field.value;
  }
  // the open question's answer for this action, as typed (a number when it reads as one)
  const box = root.querySelector(`[data-role="predict"] fieldset[data-question-for="${action}"]`);
  const field = box && box.querySelector('input.predict-number, input[type="radio"]:checked');
  const typed = field ? field.value.trim() : "";
  if (typed !== "") {
    const number = field.type === "number";
    const answer = number && Number.isFinite(Number(typed)) ? Number(typed) : typed;
    body.predict = { question: box.dataset.question, answer };
    // answered: the next question starts empty
    if (number) field.value = "";
    else field.checked = false;
  }
  return body;
}

async function act(name, action, body = {}) {
  const entry = widgets.get(name);
  entry.root.setAttribute("aria-busy", "true"); // for assistive technology; no style depends on it
  const started = Date.now(); // a notice that came after this click is not settled by it (room.js)
  try {
    const response = await post(`/api/widgets/${name}/${action}`, body, { "X-Emqlab-Tab": TAB });
    const data = await response.json();
    if (!response.ok) return showProblem(entry.root, data.error || response.statusText, response.status);
    settleNotice(entry.root, started);
    showRoom(data.room);
    refreshDive();
    // The frame of this action comes by the stream, as to every page; if it is slow, open it afresh.
    setTimeout(() => { if (entry.ver === null || entry.ver < data.ver) openStream(); }, CATCH_UP_MS);
    return true;
  } catch (err) {
    showProblem(entry.root, "The site is unreachable; retrying.", 0);
  } finally {
    entry.root.removeAttribute("aria-busy");
  }
}

function showProblem(root, message, status) {
  setStatus(root, message, status === 503 || status === 0 ? "down" : "error");
  announce(root, message);
}

function wire(name, root) {
  root.addEventListener("click", (event) => {
    const button = event.target.closest("button[data-action], button[data-send]");
    if (!button) return;
    const action = button.dataset.action || button.dataset.send;
    act(name, action, bodyFor(root, action, button));
  });
  root.addEventListener("change", (event) => {
    const input = event.target.closest("input[data-send]");
    if (!input || (input.type === "radio" && !input.checked)) return;
    const value = input.type === "checkbox" ? input.checked : input.value;
    act(name, input.dataset.send, { [input.dataset.field]: value });
  });
  // Enter in a prediction's field presses that question's action (its button comes after it)
  root.addEventListener("keydown", (event) => {
    if (event.key !== "Enter" || event.isComposing || event.target.tagName !== "INPUT") return;
    const box = event.target.closest('[data-role="predict"] fieldset[data-question-for]');
    if (!box) return;
    const button = root.querySelector(`button[data-action="${box.dataset.questionFor}"]`);
    event.preventDefault();
    if (button && !button.hidden && !button.disabled) button.click();
  });
  root.addEventListener("submit", (event) => {
    const form = event.target.closest("form[data-send]");
    if (!form) return;
    event.preventDefault();
    const body = form.dataset.compose === "batch" ? batch(form) : Object.fromEntries(new FormData(form));
    act(name, form.dataset.send, body);
  });
}

/** The ledger's own batch (`data-compose="batch"`): up to three flows of up to three children, as typed.
 *  The server's gates judge every value (an ill-formed id is refused in words). */
function batch(form) {
  const data = new FormData(form);
  const typed = (field) => String(data.get(field) || "").trim();
  const flows = [];
  for (let f = 1; f <= 3; f += 1) {
    if (!typed(`parent-${f}`)) continue;
    const children = [1, 2, 3].filter((c) => typed(`child-${f}-${c}`)).map((c) => ({
      id: typed(`child-${f}-${c}`), payload: `your flow ${f}, child ${c}`, queue: String(data.get(`queue-${f}-${c}`)),
    }));
    flows.push({ parent: { id: typed(`parent-${f}`), payload: `your flow ${f}` }, children });
  }
  // the spoil option only rewrites one id: flow 2's last child
  const target = flows[1] && flows[1].children.at(-1);
  if (target && data.get("spoil") === "kind") target.id = target.id.replace(/^JOB/, "TASK");
  if (target && data.get("spoil") === "gate") target.id = `${target.id} bad}`;
  return { flows };
}

// ---- deep links: #step=N (the page's first widget), #<widget>-step=N -------

/** Follow the link's step for this widget, if it names one: the server resets the widget and replays
 *  its tour to that step on Valkey. A link that names no step is refused by the server, in words. */
function followHash(name) {
  const { root } = widgets.get(name);
  const own = new RegExp(`(?:^#|&)(${name}-step=([^&]*))`).exec(location.hash);
  const first = /(?:^#|&)(step=([^&]*))/.exec(location.hash);
  const found = own || (first && document.querySelector("[data-widget]") === root ? first : null);
  if (!found) return;
  let step = found[2];
  try { step = decodeURIComponent(step); } catch (err) { /* a stray "%": said as written */ }
  act(name, "goto", { step, link: `#${found[1].split("=")[0]}` }).then((done) => {
    if (!done) return;
    if (!root.hasAttribute("tabindex")) root.tabIndex = -1;
    root.scrollIntoView({ block: "start" });
    root.focus({ preventScroll: true });
  });
}

// ---- the live stream ----------------------------------------------------

const each = (fn) => { for (const { root } of widgets.values()) fn(root); };

/** A fresh stream: the server resolves again which sandbox this page acts in, and draws every widget. */
function openStream() {
  if (source) source.close();
  source = new EventSource(`/api/stream?widgets=${encodeURIComponent([...widgets.keys()].join(","))}`);
  source.addEventListener("widget", (e) => swap(e.data));
  source.addEventListener("where", (e) => showRoom(JSON.parse(e.data).room));
  source.addEventListener("status", (e) => {
    const status = JSON.parse(e.data);
    each((root) => {
      // the server's words: Valkey away, or a notice (out of memory, notifications off), or none; "none"
      // clears only what a status said before, never an action's refusal (a stream opening after it)
      const said = ["down", "notice"].includes($(root, "status").dataset.kind) && !keepsNotice(root);
      if (status.valkey === "down") setStatus(root, status.message, "down");
      else if (status.message || said) setStatus(root, status.message, status.message ? "notice" : "");
    });
  });
  source.addEventListener("room", (e) => followRoom(JSON.parse(e.data), again));
  // the server's notice, in every widget: it stays until the learner dismisses it or acts on the widget (room.js)
  source.addEventListener("reset", (e) => each((root) => stickyNotice(root, JSON.parse(e.data).html)));
  // what the page follows now (tools and tests can tell it is listening)
  source.onerror = () => {
    document.body.dataset.followsClass = "reconnecting";
    const text = "Live stream interrupted; reconnecting…";
    each((root) => { if (!$(root, "status").textContent) setStatus(root, text, "down"); });
  };
  source.onopen = () => {
    document.body.dataset.followsClass = "open";
    each((root) => { if ($(root, "status").dataset.kind === "down") setStatus(root, ""); });
  };
}

/** What this page acts in may have changed (the class moved): a page without widgets is loaded again;
 *  else a fresh stream draws every widget, and the versions of another sandbox do not follow this one's. */
function again() {
  if (widgets.size === 0) return location.reload();
  openStream();
  for (const entry of widgets.values()) {
    entry.ver = null;
    entry.openedAt = null;
  }
}

async function refreshDive() {
  const data = await getJSON("/api/progress");
  const dive = data && data.dives.find((d) => d.path === location.pathname);
  const text = $(document, "dive-progress-summary");
  if (text && dive && text.textContent !== dive.summary) text.textContent = dive.summary;
}

// ---- start: a module runs once the document is parsed, so every widget is on the page ----

for (const root of document.querySelectorAll("section[data-widget]")) {
  const name = root.dataset.widget;
  const entry = { root, ver: verOf(root), openedAt: verOf(root) };
  widgets.set(name, entry);
  root.classList.add("is-live"); // live from here on: the controls show
  wire(name, root);
  if (entry.ver !== null) settled(entry, false);
}
const followLinks = () => { for (const name of widgets.keys()) followHash(name); };
followLinks();
window.addEventListener("hashchange", followLinks);
openStream();
