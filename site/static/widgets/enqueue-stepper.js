// enqueue-stepper.js — the @enqueue_flow stepper. Marks the move Valkey has
// run to (in the move list, in the widget's listing and in the text's
// listing), keeps the checkbox as the server's record says, and draws the
// parent, its counter and the children as the keys after that move hold them.
import { register, act } from "./lab.js";
import { $, el, parentCard, jobCard, counterBox, dependenciesBefore } from "./cards.js";

function picture(root, snapshot, previous) {
  const { parent, children, refused } = snapshot.picture;
  const box = el("div", "flow-picture");
  const held = parent.state
    ? parentCard(parent)
    : el("div", "job job-parent state-none job-absent", `parent ${parent.id}: no row yet`);
  box.append(held, counterBox(parent.dependencies, dependenciesBefore(previous)));
  const list = el("ul", "children");
  list.setAttribute("aria-label", "The children");
  for (const child of children) {
    const item = el("li");
    item.append(child.state ? jobCard(child) : el("div", "job state-none job-absent", `child ${child.id}: no row yet`));
    list.append(item);
  }
  box.append(list);
  if (refused) box.append(el("p", "picture-note refused", `The script refused: ${refused}`));
  $(root, "picture").replaceChildren(box);
}

function markMoves(root, move, current, refused, refusedAt) {
  root.querySelectorAll(".moves li").forEach((li) => {
    const n = Number(li.dataset.move);
    li.classList.toggle("done", n <= move && n !== current);
    li.classList.toggle("current", n === current);
    li.classList.toggle("refused", refused && n === refusedAt);
    if (n === current) li.setAttribute("aria-current", "step");
    else li.removeAttribute("aria-current");
  });
  root.querySelectorAll(".stepper-listing .line").forEach((line) => {
    const n = Number(line.dataset.move || 0);
    line.classList.toggle("current", n > 0 && n === current);
    line.classList.toggle("refused", refused && n === refusedAt);
    line.classList.toggle("ran", n > 0 && n <= move && n !== current);
  });
  // The text lists the whole file once; the widget points into it.
  document.querySelectorAll('figure.listing[data-script="enqueue_flow"]:not([data-move]) .line').forEach((line) => {
    line.classList.toggle("is-current", current > 0 && Number(line.dataset.move || 0) === current);
  });
}

function render(root, snapshot, previous) {
  const { move, total, non_job: nonJob, refused, refused_at: refusedAt } = snapshot.picture;
  // A refusal is drawn at the move whose lines refused; the moves before it ran.
  const current = refused ? refusedAt : move;
  markMoves(root, move, current, Boolean(refused), refusedAt);
  const shown = root.querySelectorAll(".stepper-listing .line.current");
  const span = shown.length ? `lines ${shown[0].dataset.line}–${shown[shown.length - 1].dataset.line}` : "";
  $(root, "listing-note").textContent = !shown.length
    ? "nothing has run yet; the whole file is listed in the text"
    : `move ${current}, ${span}${refused ? ", where it refused" : ""}, also marked in the listing in the text`;
  $(root, "non-job").checked = nonJob;
  root.querySelector('button[data-action="previous"]').disabled = move === 0 && !refused;
  root.querySelector('button[data-action="next"]').disabled = move >= total || Boolean(refused);
  root.dataset.move = String(move);
  picture(root, snapshot, previous);
}

const root = register("enqueue-stepper", render);
if (root) {
  $(root, "non-job").addEventListener("change", (e) => act("enqueue-stepper", "non-job", { non_job: e.target.checked }));
}
