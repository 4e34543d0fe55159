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
let asked = 0; // the last redraw asked for: an older page that comes after it is not drawn

async function redraw() {
  const mine = ++asked;
  if (leaving) return;
  const response = await fetch(location.href, { headers: { Accept: "text/html" } });
  if (!response.ok || leaving) return;
  const html = await response.text();
  if (mine !== asked) return;
  const fresh = new DOMParser().parseFromString(html, "text/html");
  for (const selector of LIVE) {
    const [was, now] = [page.querySelector(selector), fresh.querySelector(selector)];
    if (was && now) Idiomorph.morph(was, now);
  }
  page.dataset.live = "1"; // tools and tests can tell the page follows the class
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
    const { down } = JSON.parse(e.data);
    say(down || "");
    if (!down) redraw().catch(() => say("The live view is reconnecting…"));
  });
  source.addEventListener("closed", () => {
    source.close();
    say("This class was closed; its results stay downloadable from the instructor's page.");
  });
  source.onerror = () => say("The live view is reconnecting…");
}
