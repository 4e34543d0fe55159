// class.js — the class page (and its projector view), live: at each change the
// server says so on /instructor/rooms/<CODE>/events, and this morphs in the parts
// that follow the class as the page's own template draws them (one drawing: the
// page without JavaScript is the same HTML). The instructor's picks elsewhere on
// the page (the question, the dive) are not touched.

import { Idiomorph } from "/static/vendor/idiomorph/dist/idiomorph.esm.js";

const page = document.querySelector("[data-class]");
// the answers, the roster (its rows by id, so a focused row keeps its place), the mode's panel
const LIVE = ['[data-role="answer-list"]', '[data-role="roster-status"]', '[data-role="roster"] tbody',
  'section[aria-labelledby="mode-title"]'];
let leaving = false; // a form was sent: its answer's one-time notice must not be read by a redraw
let drawn = ""; // the class as the page shows it, from the stream: a new value means fetch the page
let drawing = null; // the fetch in flight: one at a time, each drawn, the newest last
let again = false; // a change came while fetching: fetch once more when it is drawn

async function drawOnce() {
  const response = await fetch(location.href, { headers: { Accept: "text/html" } });
  if (!response.ok || leaving) return;
  const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
  for (const selector of LIVE) {
    const [was, now] = [page.querySelector(selector), fresh.querySelector(selector)];
    if (was && now) Idiomorph.morph(was, now);
  }
  page.dataset.live = "1"; // tools and tests can tell the page follows the class
}

function redraw() {
  if (drawing) { again = true; return; }
  drawing = (async () => {
    do { again = false; if (!leaving) await drawOnce(); } while (again);
  })().catch(() => say("The live view is reconnecting…")).finally(() => { drawing = null; });
}

function say(text) {
  const status = page.querySelector('[data-role="class-status"]');
  status.hidden = !text;
  if (status.textContent !== text) status.textContent = text;
}

if (page) {
  const projector = page.dataset.projector === "1";
  const code = encodeURIComponent(page.dataset.class);
  const source = new EventSource(`/instructor/rooms/${code}/events${projector ? "?view=projector" : ""}`);
  document.addEventListener("submit", () => { leaving = true; });
  window.addEventListener("pageshow", () => { leaving = false; });
  source.addEventListener("roster", (e) => {
    const { down, seen = {}, drawn: now = "" } = JSON.parse(e.data);
    say(down || "");
    if (down) return;
    if (now !== drawn) { drawn = now; redraw(); }
    // the ages tick every second: the server's words put in place, no page fetched for them
    for (const [id, text] of Object.entries(seen)) {
      const cell = document.getElementById(`learner-${id}`)?.querySelector('[data-role="seen"]');
      if (cell && cell.textContent !== text) cell.textContent = text;
    }
  });
  source.addEventListener("closed", () => {
    source.close();
    say("This class was closed; its results stay downloadable from the instructor's page.");
  });
  source.onerror = () => say("The live view is reconnecting…");
}
