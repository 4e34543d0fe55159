// predict.js — the question a widget asks before an action, and the learner's
// progress (the widget's checklist and its badge). The question comes in the snapshot (the server picked it from the
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
    // after the buttons: the first control stays on the first screen (issue 31)
    controls.after(found);
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
    input.step = "any"; // any number is an answer: a whole one, 2.5, 1e9; Valkey's value judges it
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
  const number = box.querySelector("input.predict-number");
  if (number) {
    // any answer is sent as typed (a number when it reads as one): Valkey's truth judges it
    const typed = number.value.trim();
    if (typed === "") return null;
    return Number.isFinite(Number(typed)) ? Number(typed) : typed;
  }
  const picked = box.querySelector('input[type="radio"]:checked');
  return picked ? picked.value : null;
}

extensions.push({
  paint(name, root, snapshot) {
    const place = slot(root);
    // One fieldset per open question (one per action); one the learner is
    // typing in, still open and not yet answered, is kept as it is.
    const kept = new Map([...place.querySelectorAll("fieldset")].filter((f) => !f.dataset.used)
      .map((f) => [f.dataset.question, f]));
    const boxes = (snapshot.questions || []).map((q) => kept.get(q.id) || question(name, q, root));
    const same = boxes.length === place.children.length && boxes.every((b, i) => place.children[i] === b);
    if (!same) place.replaceChildren(...boxes);
    ticks(root, snapshot.steps);
    // In a class acting in another sandbox the record is the learner's own (the answer's), not this one's.
    if (!root.dataset.classMode || root.dataset.classMode === "own") showWidget(root, snapshot.progress);
  },
  body(name, action, root) {
    const box = root.querySelector(`[data-role="predict"] fieldset[data-question-for="${action}"]`);
    if (!box) return {};
    const given = answer(box);
    if (given === null) return {};
    box.dataset.used = "1"; // answered: the next snapshot draws the next question afresh
    return { predict: { question: box.dataset.question, answer: given } };
  },
  acted(name, root, data) {
    if (!data.progress) return;
    const before = shown.get(name);
    showWidget(root, data.progress);
    const now = data.progress;
    // The dive's line is read again only when this widget's counts moved.
    if (!before || before.reached.length !== now.reached.length || before.asked !== now.asked) refreshDive();
  },
});

/** The checklist's ticks, as the snapshot says them (read from the learner's record). */
function ticks(root, steps) {
  for (const step of steps || []) {
    const item = root.querySelector(`[data-role="checklist"] li[data-step="${step.id}"]`);
    if (item && item.classList.contains("reached") !== step.reached) {
      item.classList.toggle("reached", step.reached);
      item.setAttribute("aria-label", `${step.label}: ${step.reached ? "reached" : "not reached yet"}`);
    }
  }
}

// The progress each widget's badge shows now, as the server said it.
const shown = new Map();

function summary(progress) {
  const total = progress.steps.length;
  const done = total > 0 && progress.reached.length === total;
  let said = done ? `Done: all ${total} steps reached` : `${progress.reached.length} of ${total} steps reached`;
  if (progress.asked) said += `; ${progress.right} of ${progress.asked} prediction${progress.asked === 1 ? "" : "s"} right`;
  return { said: `${said}.`, done };
}

function showWidget(root, progress) {
  if (!progress) return;
  shown.set(root.dataset.widget, progress);
  let badge = $(root, "widget-progress");
  if (!badge) {
    badge = el("p", "widget-progress");
    badge.dataset.role = "widget-progress";
    root.querySelector(".widget-title").after(badge);
  }
  const { said, done } = summary(progress);
  if (badge.textContent !== said) badge.textContent = said;
  if (root.classList.contains("is-done") !== done) root.classList.toggle("is-done", done);
  const reached = new Set(progress.reached);
  ticks(root, progress.steps.map((id) => ({ id, reached: reached.has(id),
    label: (root.querySelector(`li[data-step="${id}"] a`) || {}).textContent || id })));
}

async function refreshDive() {
  try {
    const response = await fetch("/api/progress", { credentials: "same-origin" });
    if (!response.ok) return;
    const data = await response.json();
    const line = document.querySelector('[data-role="dive-progress"]');
    const dive = data.dives.find((d) => d.path === location.pathname);
    const text = line && dive ? line.querySelector('[data-role="dive-progress-summary"]') : null;
    if (text && text.textContent !== dive.summary) text.textContent = dive.summary;
  } catch (err) {
    // The site is away: the server-rendered line stays as it was.
  }
}
