// class.js — the class page (and its projector view), live: the server sends
// the class in words on /instructor/rooms/<CODE>/events at each change; this
// lays them out as the page's template does. Every word is the server's.

import { withRole as el } from "./widgets/dom.js";

const page = document.querySelector("[data-class]");

// ---- the answers: one block per question and round -----------------------

function distribution(items, role, line) {
  const list = el("ul", undefined, role);
  list.className = "distribution";
  if (role === "distribution") list.setAttribute("aria-label", "Answers and their counts");
  for (const item of items) list.append(line(item));
  return list;
}

function answerLine(a) {
  const li = el("li");
  li.dataset.mark = a.mark;
  const value = el("span", a.value);
  value.className = "answer-value";
  li.append(value, ": ", el("span", a.count, "count"));
  if (a.mark) {
    const mark = el("span", `(${a.mark})`);
    mark.className = "answer-mark";
    li.append(" ", mark);
  }
  return li;
}

function movedLine(m) {
  const li = el("li");
  const value = el("span", m.value);
  value.className = "answer-value";
  li.append(value, `: ${m.first} → ${m.second}`);
  return li;
}

function question(q) {
  const box = el("article");
  box.className = "class-question";
  box.dataset.question = q.key;
  box.dataset.revealed = q.revealed ? "1" : "0";
  const where = el("p", `${q.widget} · ${q.where}`, "where");
  where.className = "hint";
  const counts = el("p");
  counts.append(el("strong", q.answered, "answered"), "; ", el("span", q.waiting, "waiting"));
  box.append(el("h3", q.legend), where, counts, distribution(q.answers, "distribution", answerLine));
  if (q.common_wrong) {
    const wrong = el("p", undefined, "common-wrong");
    wrong.append("Most common wrong answer: ", el("strong", q.common_wrong.value), ` (${q.common_wrong.count}).`);
    if (q.common_wrong.feedback) wrong.append(" ", el("span", q.common_wrong.feedback, "feedback"));
    box.append(wrong);
  }
  if (q.moved.length) {
    box.append(el("p", "First vote → second vote:"), distribution(q.moved, "moved", movedLine),
      el("p", q.moved_words, "moved-words"));
  }
  return box;
}

function drawAnswers(answers) {
  const list = page.querySelector('[data-role="answer-list"]');
  if (!answers.length) list.replaceChildren(el("p", "No learner has answered a question yet.", "no-answers"));
  else list.replaceChildren(...answers.map(question));
}

// ---- the roster ------------------------------------------------------------

const CELLS = [["Page", "page"], ["Widget", "widget"], ["Progress", "progress"], ["Exercises", "exercises"],
  ["Last activity", "seen"]];

function cell(label, role, text) {
  const td = el("td", text, role);
  td.dataset.label = label;
  return td;
}

function actions(code, learner) {
  const td = cell("Actions", null);
  td.className = "lab-actions";
  const form = el("form");
  form.method = "post";
  form.action = `/instructor/rooms/${code}/learners/${learner.id}/reset`;
  const reset = el("button", "Reset");
  reset.type = "submit";
  reset.setAttribute("aria-label", `Reset ${learner.name}`);
  form.append(reset);
  const watch = el("a", "Watch");
  watch.className = "lab-button";
  watch.href = `/instructor/rooms/${code}/learners/${learner.id}/watch`;
  watch.setAttribute("aria-label", `Watch ${learner.name}`);
  td.append(form, watch);
  return td;
}

function row(code, learner) {
  const tr = el("tr");
  tr.dataset.learner = learner.id;
  if (learner.stuck) tr.dataset.stuck = "1";
  const name = el("th", learner.name, "name");
  name.scope = "row";
  name.dataset.label = "Name";
  tr.append(name, ...CELLS.map(([label, role]) => cell(label, role, learner[role])),
    cell("Online", "online", learner.online ? "online" : "offline"), cell("Needs a hand", "stuck", learner.stuck ? `Stuck: ${learner.stuck}` : "—"), actions(code, learner));
  return tr;
}

function drawRoster(data) {
  const body = page.querySelector('[data-role="roster"] tbody');
  if (!body) return;
  // Keep the row that holds the keyboard focus in place: only its cells change.
  const focused = document.activeElement && document.activeElement.closest("tr[data-learner]");
  body.replaceChildren(...data.learners.map((learner) => {
    const fresh = row(data.code, learner);
    if (!focused || focused.dataset.learner !== learner.id) return fresh;
    for (const role of ["name", ...CELLS.map(([, r]) => r), "online", "stuck"]) {
      focused.querySelector(`[data-role="${role}"]`).textContent = fresh.querySelector(`[data-role="${role}"]`).textContent;
    }
    return focused;
  }));
  const status = page.querySelector('[data-role="roster-status"]');
  const text = `${data.count} learner${data.count === 1 ? "" : "s"} joined.`;
  if (status.textContent !== text) status.textContent = text;
  const mode = page.querySelector('[data-role="mode"]');
  if (mode && mode.dataset.mode !== data.mode) {
    mode.dataset.mode = data.mode;
    mode.textContent = `The mode changed to "${data.mode}": reload the page for its controls.`;
  }
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
  source.addEventListener("roster", (e) => {
    const data = JSON.parse(e.data);
    if (data.down) return say(data.down);
    say("");
    drawAnswers(data.answers);
    if (!projector) drawRoster(data);
    page.dataset.live = "1"; // tools and tests can tell the page follows the class
  });
  source.addEventListener("closed", () => {
    source.close();
    say("This class was closed; its results stay downloadable from the instructor's page.");
  });
  source.onerror = () => say("The live view is reconnecting…");
}
