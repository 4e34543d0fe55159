// race.js — the thinnest glue: the server draws the race's picture with its one
// template (site/templates/widgets/_race_picture.html) into the snapshot; this
// sets it as it is and sends the learner's choices with Run.
import { register } from "./lab.js";
import { $ } from "./cards.js";

const root = document.querySelector('[data-widget="race"]');
const value = (role) => Number(root.querySelector(`[data-role="${role}"]`).value);

function bodyFor(action) {
  if (action !== "run") return {};
  return {
    workers: value("race-workers"), children: value("race-children"), seed: value("race-seed"),
    faults: [...root.querySelectorAll('[data-role="race-fault"]:checked')].map((box) => box.value),
    early_release: root.querySelector('[data-role="race-early"]').checked,
  };
}

register("race", (widget, snapshot) => { $(widget, "picture").innerHTML = snapshot.picture.html; }, bodyFor);
