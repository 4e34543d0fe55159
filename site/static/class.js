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
// The class as the page's HTML draws it (the server's digest of it), and as the stream last said it:
// the page fetches itself while they differ. Compared with what was fetched, not with the last frame,
// so a fetch that caught a passing state (a learner's page between reload and stream) is fetched again.
let drawn = page ? page.dataset.drawn : "";
let latest = drawn;
let drawing = null; // the fetch in flight: one at a time
const TRIES = 3; // fetches in a row while the class keeps moving; the next frame starts again

async function drawOnce() {
  const response = await fetch(location.href, { headers: { Accept: "text/html" } });
  if (!response.ok || leaving) return false;
  const fresh = new DOMParser().parseFromString(await response.text(), "text/html");
  for (const selector of LIVE) {
    const [was, now] = [page.querySelector(selector), fresh.querySelector(selector)];
    if (was && now) Idiomorph.morph(was, now);
  }
  drawn = fresh.querySelector("[data-class]")?.dataset.drawn ?? latest;
  page.dataset.drawn = drawn; // what the page shows now, beside `latest`: tools can tell it has settled
  return true;
}

function redraw() {
  if (drawing) return; // the fetch in flight compares again when it is drawn
  drawing = (async () => {
    for (let tries = 0; tries < TRIES && drawn !== latest && !leaving; tries++) {
      if (!(await drawOnce())) break; // refused, or the form's answer is on its way
    }
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
    page.dataset.live = "1"; // the stream is heard: tools and tests can tell the page follows the class
    latest = page.dataset.latest = now;
    if (now !== drawn) redraw();
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
