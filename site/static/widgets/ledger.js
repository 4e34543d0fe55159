// ledger.js — the bulk ledger. Draws the result list the adds returned and,
// per flow, its parent and children as the snapshot read them from Valkey.
import { register, act, $, el } from "./lab.js";

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
function flowCards(flows, picked) {
  const list = el("ol", "ledger-flows");
  list.setAttribute("aria-label", "Each flow's parent and children as Valkey holds them");
  for (const f of flows) {
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
      const where = c.sets.length ? ` (ledger.${c.queue})` : "";
      kids.append(el("li", `state-${(c.state || "none").split(",")[0]}`, `${c.id} · ${c.state || "no row"}${where}`));
    }
    item.append(parent, kids);
    list.append(item);
  }
  return list;
}

function render(root, snapshot) {
  const { mode, move, total, picked, result, retry, flows } = snapshot.picture;
  const box = el("div", "ledger-picture");
  box.append(resultList(result, retry), flowCards(flows, picked));
  const chosen = flows.find((f) => f.number === picked);
  const line = el("p", "ledger-picked", chosen ? chosen.line : "Pick a flow to read its entry and its parent's state.");
  line.dataset.role = "picked";
  box.append(line);
  $(root, "picture").replaceChildren(box);
  root.querySelector('[data-action="previous"]').disabled = move === 0 || mode === "custom";
  root.querySelector('[data-action="next"]').disabled = move >= total || mode === "custom";
  root.querySelectorAll("button[data-flow]").forEach((button) => {
    button.setAttribute("aria-pressed", String(Number(button.dataset.flow) === picked));
  });
  root.dataset.move = String(move);
}

const root = register("ledger", render);
if (root) {
  root.querySelectorAll("button[data-flow]").forEach((button) => {
    button.addEventListener("click", () => act("ledger", "pick", { flow: Number(button.dataset.flow) }));
  });
}
