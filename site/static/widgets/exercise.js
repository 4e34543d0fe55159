// exercise.js — an exercise: the learner's script is posted to the graders
// (POST /api/exercises/<name>/run streams its place in line, then the result,
// each with the server's sentence) and each check's verdict, with a failing
// check's keys before and after, is put in as the server drew it. The list
// shows one run; a run refused by the graders is drawn by the server too (every check
// "not run", and why); one refused before them shows the list as the page opened.
// GET /api/exercises/<name> (`mine`) brings back the learner's last script;
// their best run is the server's drawing (widgets/_exercise_best.html), at
// first paint and in each result.
import { $, announce, el, getJSON, post, setStatus } from "./dom.js";

/** A run's checks and the best run as the server drew them (as the exercise's own page draws them). */
function drawResults(root, result) {
  $(root, "results").innerHTML = result.html;
  $(root, "best").outerHTML = result.best_html;
  say(root, result.summary, result.passed === result.total ? "ok" : "");
}

function say(root, text, kind = "") {
  setStatus(root, text, kind);
  announce(root, text);
}

/** A run that did not happen: the server's sentence, and no verdict of the run before (`html`: the list). */
function refused(root, said, html) {
  $(root, "results").innerHTML = html;
  say(root, said, "down");
}

/** The learner's last script into the editor, unless they already typed. */
async function loadScript(name, textarea) {
  const opened = textarea.value;
  const data = await getJSON(`/api/exercises/${name}`);
  if (data && data.mine.script !== null && textarea.value === opened) textarea.value = data.mine.script;
}

async function run(root, name, checks, blank) {
  const script = $(root, "script").value;  // the editor keeps the textarea in step
  say(root, "Sending your script to a grader…");
  const running = (check) => el("li", { class: "check-running", "data-check": check }, `${check}: running…`);
  $(root, "results").replaceChildren(...checks.map(running));
  root.setAttribute("aria-busy", "true");
  try {
    const response = await post(`/api/exercises/${name}/run`, { script }, { Accept: "text/event-stream" });
    if (!response.ok) return refused(root, (await response.json()).error, blank);
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    let ended = false;
    for (let read = await reader.read(); !read.done; read = await reader.read()) {
      const frames = (buffer + read.value).split("\r\n\r\n");
      buffer = frames.pop(); // a frame not whole yet
      for (const frame of frames) {
        const event = /^event: (\w+)/m.exec(frame);
        const data = /^data: (.*)$/m.exec(frame);
        if (!event || !data) continue;
        const payload = JSON.parse(data[1]);
        if (event[1] === "place") say(root, payload.said);
        if (event[1] === "result") drawResults(root, payload);
        if (event[1] === "error") refused(root, payload.error, payload.html);
        ended = ended || event[1] === "result" || event[1] === "error";
      }
    }
    if (!ended) throw new Error("the stream ended without a result");
  } catch (err) {
    refused(root, "The site is unreachable; try again in a moment.", blank);
  } finally {
    root.removeAttribute("aria-busy");
  }
}

async function start(root) {
  const name = root.dataset.exercise;
  const checks = [...$(root, "results").children].map((item) => item.dataset.check);
  const blank = $(root, "results").innerHTML; // the server's list before any run
  $(root, "form").addEventListener("submit", (event) => {
    event.preventDefault();
    if (!root.hasAttribute("aria-busy")) run(root, name, checks, blank);  // one run at a time per exercise
  });
  const textarea = $(root, "script");
  await loadScript(name, textarea);  // the editor opens on what the textarea holds then
  // The editor's modules (some 800 kB unpacked) load when the exercise comes near the screen,
  // not with the page: a reader who never scrolls to it pays nothing for them, and a phone paints the prose first.
  const observer = new IntersectionObserver(async (seen) => {
    if (!seen.some((entry) => entry.isIntersecting)) return;
    observer.disconnect();
    try {
      const { enhance } = await import("./editor.js");
      enhance(textarea, document.getElementById(`${root.id}-label`), $(root, "hint"));
    } catch (err) {
      // no editor (its modules did not load): the plain textarea does the work
    }
  }, { rootMargin: "800px 0px" });
  observer.observe(root);
}

for (const root of document.querySelectorAll("[data-exercise]")) start(root);
