// class.js — the class page's live roster. The server reads the roster from
// Valkey and sends it on /instructor/rooms/<CODE>/events each time it changes;
// this module only redraws the table from what it receives (every word in a
// cell, the progress included, is the server's).

const page = document.querySelector("[data-class]");

function cell(tag, label, role, text) {
  const node = document.createElement(tag);
  node.dataset.label = label;
  if (role) node.dataset.role = role;
  if (text !== undefined) node.textContent = text;
  return node;
}

function actions(code, learner) {
  const td = cell("td", "Actions", null);
  td.className = "lab-actions";
  const form = document.createElement("form");
  form.method = "post";
  form.action = `/instructor/rooms/${code}/learners/${learner.id}/reset`;
  const reset = document.createElement("button");
  reset.type = "submit";
  reset.textContent = "Reset";
  reset.setAttribute("aria-label", `Reset ${learner.name}`);
  form.append(reset);
  const watch = document.createElement("a");
  watch.className = "lab-button";
  watch.href = `/instructor/rooms/${code}/learners/${learner.id}/watch`;
  watch.textContent = "Watch";
  watch.setAttribute("aria-label", `Watch ${learner.name}`);
  td.append(form, watch);
  return td;
}

function row(code, learner) {
  const tr = document.createElement("tr");
  tr.dataset.learner = learner.id;
  const name = cell("th", "Name", "name", learner.name);
  name.scope = "row";
  tr.append(
    name,
    cell("td", "Dive", "page", learner.page || "—"),
    cell("td", "Widget", "widget", learner.widget || "—"),
    cell("td", "Progress", "progress", learner.progress_text),
    cell("td", "Last activity", "seen", learner.ago),
    cell("td", "Online", "online", learner.online ? "online" : "offline"),
    actions(code, learner),
  );
  return tr;
}

function draw(roster) {
  const body = page.querySelector('[data-role="roster"] tbody');
  // Keep the row that holds the keyboard focus in place: only its cells change.
  const focused = document.activeElement && document.activeElement.closest("tr[data-learner]");
  const rows = roster.learners.map((learner) => {
    const fresh = row(roster.code, learner);
    if (focused && focused.dataset.learner === learner.id) {
      for (const role of ["name", "page", "widget", "progress", "seen", "online"]) {
        focused.querySelector(`[data-role="${role}"]`).textContent = fresh.querySelector(`[data-role="${role}"]`).textContent;
      }
      return focused;
    }
    return fresh;
  });
  body.replaceChildren(...rows);
  const count = roster.learners.length;
  const status = page.querySelector('[data-role="roster-status"]');
  const text = `${count} learner${count === 1 ? "" : "s"} joined.`;
  if (status.textContent !== text) status.textContent = text;
  const mode = page.querySelector('[data-role="mode"]');
  if (mode.dataset.mode !== roster.mode) {
    mode.dataset.mode = roster.mode;
    mode.textContent = `The mode changed to "${roster.mode}": reload the page for its controls.`;
  }
}

if (page) {
  const code = page.dataset.class;
  const source = new EventSource(`/instructor/rooms/${encodeURIComponent(code)}/events`);
  source.addEventListener("roster", (e) => draw(JSON.parse(e.data)));
  source.addEventListener("closed", () => {
    source.close();
    page.querySelector('[data-role="roster-status"]').textContent = "This class was closed.";
  });
}
