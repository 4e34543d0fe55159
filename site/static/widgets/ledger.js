// ledger.js — the bulk ledger. Draws the result list the adds returned (kept
// in Valkey) and, per flow, its parent and children as the snapshot read them
// from Valkey; sends the learner's own batch as typed (the server's id gate
// judges every id).
import { register, act } from "./lab.js";
import { $, el } from "./cards.js";

const entryText = ([parent, children]) => `(${parent}, [${children.join(", ")}])`;

function resultList(result, retry) {
  const box = el("div", "ledger-result");
  box.append(el("span", "ledger-label", "the result, in input order"));
  const list = el("ol", "ledger-entries");
  list.dataset.role = "result";
  if (result.length === 0) list.append(el("li", "empty", "empty: no flow has landed"));
  for (const entry of result) list.append(el("li", "", entryText(entry)));
  box.append(list);
  if (retry) box.append(el("p", "ledger-retry", `the retry of flow 4 returned ${entryText(retry)}`));
  return box;
}

// One card per flow (not a wide table): the widget sits in a narrow column.
function flowCard(f, picked) {
  const item = el("li", "ledger-flow");
  item.dataset.flow = String(f.number);
  item.classList.toggle("picked", f.number === picked);
  if (f.number === picked) item.setAttribute("aria-current", "true");
  item.append(el("span", "ledger-flow-title", `Flow ${f.number} · ${f.path}`));
  const entry = f.entry ? entryText(f.entry) : f.tried ? "not in the result" : "not added yet";
  item.append(el("span", `ledger-entry${f.entry ? "" : " absent"}`, entry));
  const parent = el("div", "ledger-parent");
  parent.append(el("span", "job-id", f.parent));
  const state = el("span", `job-state state-${f.state || "none"}`, f.state || "no row");
  state.dataset.role = "parent-state";
  parent.append(state);
  if (f.state) {
    const deps = f.dependencies === null ? "no :dependencies" : `:dependencies = ${f.dependencies}`;
    parent.append(el("span", "job-sets", `${deps} · ${f.sets.length ? `in ${f.sets.join(", ")}` : "in no state set"}`));
  }
  const kids = el("ul", "ledger-children");
  for (const c of f.children) {
    kids.append(el("li", `state-${c.state || "none"}`, `${c.id} (ledger.${c.queue}) · ${c.where}`));
  }
  item.append(parent, kids);
  return item;
}

// One "Flow N" button per flow on the ledger (four, or as many as your batch has).
function pickButtons(root, total, picked) {
  const group = $(root, "pick");
  if (group.querySelectorAll("button[data-flow]").length !== total) {
    const buttons = [];
    for (let n = 1; n <= total; n += 1) {
      const button = el("button", "", `Flow ${n}`);
      button.type = "button";
      button.dataset.flow = String(n);
      buttons.push(button);
    }
    group.replaceChildren(...buttons);
  }
  group.querySelectorAll("button[data-flow]").forEach((button) => {
    button.setAttribute("aria-pressed", String(Number(button.dataset.flow) === picked));
  });
}

function render(root, snapshot) {
  const { mode, move, total, picked, result, retry, refused, flows } = snapshot.picture;
  const box = el("div", "ledger-picture");
  box.append(resultList(result, retry));
  if (refused) box.append(el("p", "ledger-refused", `add_bulk refused your batch: ${refused}`));
  const list = el("ol", "ledger-flows");
  list.setAttribute("aria-label", "Each flow's parent and children as Valkey holds them");
  for (const f of flows) list.append(flowCard(f, picked));
  box.append(list);
  const chosen = flows.find((f) => f.number === picked);
  const line = el("p", "ledger-picked", chosen ? chosen.line : "Pick a flow to read its entry and its parent's state.");
  line.dataset.role = "picked";
  box.append(line);
  $(root, "picture").replaceChildren(box);
  root.querySelector('button[data-action="previous"]').disabled = move === 0 || mode === "own";
  root.querySelector('button[data-action="next"]').disabled = move >= total || mode !== "step";
  pickButtons(root, total, picked);
}

// The batch as typed: the words go to the server as they are (the spoil
// option only rewrites one id); the server's gate judges every id.
function ownBatch(form) {
  const data = new FormData(form);
  const flows = [];
  for (let f = 1; f <= 3; f += 1) {
    const parent = String(data.get(`parent-${f}`) || "").trim();
    if (!parent) continue;
    const children = [];
    for (let c = 1; c <= 3; c += 1) {
      const id = String(data.get(`child-${f}-${c}`) || "").trim();
      if (id) children.push({ id, payload: `your flow ${f}, child ${c}`, queue: String(data.get(`queue-${f}-${c}`)) });
    }
    flows.push({ parent: { id: parent, payload: `your flow ${f}` }, children });
  }
  const spoil = data.get("spoil");
  const target = flows[1] && flows[1].children[flows[1].children.length - 1];
  if (target && spoil === "kind") target.id = target.id.replace(/^JOB/, "TASK");
  if (target && spoil === "gate") target.id = `${target.id} bad}`;
  return { flows };
}

const root = register("ledger", render);
if (root) {
  // one listener for every Flow N button, the ones redrawn for your own batch too
  $(root, "pick").addEventListener("click", (event) => {
    const button = event.target.closest("button[data-flow]");
    if (button) act("ledger", "pick", { flow: Number(button.dataset.flow) });
  });
  const form = $(root, "own-batch");
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    act("ledger", "own-batch", ownBatch(form));
  });
}
