// enqueue-stepper.js — the @enqueue_flow stepper. Highlights the move Valkey
// has run to and keeps the checkbox in step with the server's record.
import { register, act, $ } from "./lab.js";

function render(root, snapshot) {
  const { move, total, non_job: nonJob, refused } = snapshot.picture;
  root.querySelectorAll(".moves li").forEach((li) => {
    const n = Number(li.dataset.move);
    li.classList.toggle("done", n < move);
    li.classList.toggle("current", n === move);
    if (n === move) li.setAttribute("aria-current", "step");
    else li.removeAttribute("aria-current");
  });
  root.querySelectorAll(".stepper-listing .line").forEach((line) => {
    const n = Number(line.dataset.move || 0);
    line.classList.toggle("current", n === move && n > 0);
    line.classList.toggle("ran", n > 0 && n < move);
  });
  $(root, "non-job").checked = nonJob;
  root.querySelector('[data-action="previous"]').disabled = move === 0;
  root.querySelector('[data-action="next"]').disabled = move >= total || Boolean(refused);
  root.dataset.move = String(move);
}

const root = register("enqueue-stepper", render);
if (root) {
  $(root, "non-job").addEventListener("change", (e) => act("enqueue-stepper", "non-job", { non_job: e.target.checked }));
  // #step=N (or #enqueue-stepper-step=N) opens the stepper at move N, replayed on Valkey.
  const match = /(?:^|[#&])(?:enqueue-stepper-)?step=(\d+)/.exec(location.hash);
  if (match) act("enqueue-stepper", "goto", { move: Number(match[1]) });
}
