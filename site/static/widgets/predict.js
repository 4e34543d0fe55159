// predict.js — the question a widget asks before an action, and the learner's
// progress. The question comes in the snapshot (the server picked it from the
// keys Valkey holds); the answer rides in the body of the action's own button;
// the verdict comes back in the outcome, judged by the server against what
// Valkey holds after that action. Nothing here knows an answer or a verdict.
import { extensions } from "./lab.js";
import { $, el } from "./cards.js";

function slot(root) {
  let found = $(root, "predict");
  if (!found) {
    found = el("div", "predict");
    found.dataset.role = "predict";
    const controls = root.querySelector(".controls");
    controls.before(found);
  }
  return found;
}

function question(name, q, root) {
  const box = el("fieldset", "predict-question");
  box.dataset.question = q.id;
  box.dataset.questionFor = q.action;
  box.append(el("legend", "", q.legend));
  const id = `predict-${name}-${q.id}`;
  if (q.kind === "number") {
    const label = el("label", "predict-label", "Your answer ");
    const input = el("input", "predict-number");
    input.type = "number";
    input.step = "1";
    input.id = id;
    label.htmlFor = id;
    box.append(label, input);
  } else {
    q.choices.forEach((choice, i) => {
      const label = el("label", "check predict-choice");
      const radio = el("input");
      radio.type = "radio";
      radio.name = id;
      radio.value = choice.value;
      radio.id = `${id}-${i}`;
      label.append(radio, ` ${choice.label}`);
      box.append(label);
    });
  }
  const button = root.querySelector(`button[data-action="${q.action}"]`);
  const press = button ? button.textContent.trim() : q.action;
  box.append(el("p", "predict-hint", `Optional: answer, then press ${press}. Valkey's keys after it judge your answer.`));
  return box;
}

function answer(box) {
  const number = box.querySelector('input[type="number"]');
  if (number) return number.value.trim() === "" ? null : Number(number.value);
  const picked = box.querySelector('input[type="radio"]:checked');
  return picked ? picked.value : null;
}

extensions.push({
  paint(name, root, snapshot) {
    const place = slot(root);
    const q = snapshot.question;
    if (!q) return place.replaceChildren();
    const shown = place.querySelector("fieldset");
    // Keep what the learner is typing while the stream repaints the same question.
    if (shown && shown.dataset.question === q.id && !shown.dataset.used) return;
    place.replaceChildren(question(name, q, root));
  },
  body(name, action, root) {
    const box = root.querySelector('[data-role="predict"] fieldset');
    if (!box || box.dataset.questionFor !== action) return {};
    const given = answer(box);
    if (given === null || Number.isNaN(given)) return {};
    box.dataset.used = "1"; // answered: the next snapshot draws the next question afresh
    return { predict: { question: box.dataset.question, answer: given } };
  },
  acted(name, root, data) {
    const progress = data.outcome && data.outcome.detail ? data.outcome.detail.progress : null;
    if (!progress) return;
    const before = shown.get(name);
    showWidget(root, progress);
    // The dive's line counts widgets done and predictions: it is read again
    // only when this widget's count of those moved (most clicks move neither).
    if (!before || before.done !== progress.done || before.asked !== progress.asked || before.right !== progress.right) {
      refreshDive();
    }
  },
});

// The progress each widget's badge shows now, as the server said it.
const shown = new Map();

function showWidget(root, progress) {
  shown.set(root.dataset.widget, progress);
  let badge = $(root, "widget-progress");
  if (!badge) {
    badge = el("p", "widget-progress");
    badge.dataset.role = "widget-progress";
    root.querySelector(".widget-title").after(badge);
  }
  // Written only when it changed: a page repainting the same words is not a change.
  if (badge.textContent !== progress.summary) badge.textContent = progress.summary;
  const done = progress.done ? "1" : "0";
  if (badge.dataset.done !== done) badge.dataset.done = done;
  if (root.classList.contains("is-done") !== progress.done) root.classList.toggle("is-done", progress.done);
}

async function refreshDive() {
  try {
    const response = await fetch("/api/progress", { credentials: "same-origin" });
    if (!response.ok) return;
    const data = await response.json();
    for (const [name, progress] of Object.entries(data.widgets)) {
      const root = document.querySelector(`[data-widget="${name}"]`);
      if (root) showWidget(root, progress);
    }
    const line = document.querySelector('[data-role="dive-progress"]');
    const dive = data.dives.find((d) => d.path === location.pathname);
    const summary = line && dive ? line.querySelector('[data-role="dive-progress-summary"]') : null;
    if (summary && summary.textContent !== dive.summary) summary.textContent = dive.summary;
  } catch (err) {
    // The site is away: the server-rendered line stays as it was.
  }
}

refreshDive();
