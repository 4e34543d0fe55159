// exercise.js — an exercise: the learner's script is posted to the graders
// (POST /api/exercises/<name>/run, as a stream of its place in line, then the
// result), and each check's verdict is drawn as the server said it. A failing
// check opens to show the scenario's keys before and after the learner's
// script, as the graders read them from Valkey. Nothing is judged here.
import { el, formatValue } from "./dom.js";

function keyList(title, keys) {
  const box = el("div", "exercise-keys");
  box.append(el("p", "exercise-keys-title", title));
  const table = document.createElement("table");
  table.className = "keys";
  const head = table.createTHead().insertRow();
  for (const label of ["key", "type", "value"]) {
    const th = document.createElement("th");
    th.scope = "col";
    th.textContent = label;
    head.append(th);
  }
  const body = table.createTBody();
  for (const key of keys) {
    const row = body.insertRow();
    row.insertCell().textContent = key.name;
    row.insertCell().textContent = key.type;
    row.insertCell().textContent = formatValue({ ...key, cut: !key.whole });
  }
  if (!keys.length) body.insertRow().insertCell().textContent = "no keys";
  box.append(table);
  return box;
}

function drawResults(root, result) {
  const list = root.querySelector('[data-role="results"]');
  const pictures = new Map((result.pictures || []).map((p) => [p.check, p]));
  list.replaceChildren(...result.checks.map((check) => {
    const item = el("li", check.passed ? "check-passed" : "check-failed");
    item.dataset.check = check.name;
    item.dataset.passed = check.passed ? "1" : "0";
    const line = `${check.name}: ${check.passed ? "passed" : "failed"} — ${check.said}`;
    const picture = pictures.get(check.name);
    if (check.passed || !picture) {
      item.textContent = line;
      return item;
    }
    const details = el("details", "exercise-picture");
    details.append(el("summary", "", line));
    details.append(keyList(`Before your script (${picture.step})`, picture.before),
      keyList("After your script", picture.after));
    item.append(details);
    return item;
  }));
  const said = `${result.passed} of ${result.total} checks passed.`;
  root.querySelector('[data-role="status"]').textContent = said;
  root.querySelector('[data-role="announce"]').textContent = said;
}

async function run(root, name) {
  const status = root.querySelector('[data-role="status"]');
  const script = root.querySelector('[data-role="script"]').value;
  status.textContent = "Sending your script to a grader…";
  root.setAttribute("aria-busy", "true");
  try {
    const response = await fetch(`/api/exercises/${name}/run`, {
      method: "POST", credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
      body: JSON.stringify({ script }),
    });
    if (!response.ok) {
      const data = await response.json();
      status.textContent = data.error + (data.line ? ` (line ${data.line})` : "");
      return;
    }
    const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += value;
      let end;
      while ((end = buffer.indexOf("\r\n\r\n")) >= 0) {
        const chunk = buffer.slice(0, end);
        buffer = buffer.slice(end + 4);
        const event = /^event: (\w+)/m.exec(chunk);
        const data = /^data: (.*)$/m.exec(chunk);
        if (!event || !data) continue;
        const payload = JSON.parse(data[1]);
        if (event[1] === "place") {
          status.textContent = payload.place > 0
            ? `Waiting for a grader: ${payload.place} ahead of you.` : "A grader is running your checks…";
        } else if (event[1] === "result") drawResults(root, payload);
        else if (event[1] === "error") status.textContent = payload.error + (payload.line ? ` (line ${payload.line})` : "");
      }
    }
  } catch (err) {
    status.textContent = "The site is unreachable; try again in a moment.";
  } finally {
    root.removeAttribute("aria-busy");
  }
}

for (const root of document.querySelectorAll("[data-exercise]")) {
  const name = root.dataset.exercise;
  root.classList.add("is-live");
  root.querySelector('[data-role="form"]').addEventListener("submit", (event) => {
    event.preventDefault();
    run(root, name);
  });
}
