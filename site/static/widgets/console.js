// console.js — the Valkey console: a command sent to POST /api/console, its
// reply printed as the server wrote it (as valkey-cli would). The transcript is
// kept in Valkey, so a reload or a second tab reads it back (GET /api/console).
import { $, el, getJSON, post } from "./dom.js";

const MAX_ENTRIES = 200; // entries kept on the page; older ones scroll away

function start(root) {
  const [log, form, input] = ["transcript", "form", "input"].map((role) => $(root, role));
  const history = [];
  let cursor = 0; // history index the arrows are on; history.length = the fresh line
  let draft = "";

  function entry({ command, reply_lines: lines = [], kind = "reply" }) {
    log.append(el("div", { class: `console-entry console-${kind}` },
      el("p", { class: "console-command" },
        el("span", { class: "console-prompt", "aria-hidden": "true" }, "valkey> "), el("code", {}, command)),
      el("pre", { class: "console-reply", "data-kind": kind }, lines.join("\n"))));
    while (log.children.length > MAX_ENTRIES) log.firstChild.remove();
    log.scrollTop = log.scrollHeight;
  }

  function remember(command) {
    if (command && history[history.length - 1] !== command) history.push(command);
    cursor = history.length;
    draft = "";
  }

  const refused = (command, why) => entry({ command, reply_lines: [`(refused) ${why}`], kind: "refused" });

  async function run(command) {
    if (!command.trim()) return;
    remember(command);
    input.value = "";
    root.setAttribute("aria-busy", "true");
    try {
      const response = await post("/api/console", { command });
      const data = await response.json();
      if (data.reply_lines) entry(data);
      else refused(command, data.error || response.statusText);
    } catch (err) {
      refused(command, "the site is unreachable; try again in a moment");
    } finally {
      root.removeAttribute("aria-busy");
    }
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    run(input.value);
  });

  input.addEventListener("keydown", (event) => {
    const step = { ArrowUp: -1, ArrowDown: 1 }[event.key];
    if (!step || cursor + step < 0 || cursor + step > history.length) return;
    if (cursor === history.length) draft = input.value; // the line being typed, kept for the way back
    cursor += step;
    input.value = cursor === history.length ? draft : history[cursor];
    event.preventDefault();
    input.setSelectionRange(input.value.length, input.value.length);
  });

  for (const button of root.querySelectorAll("button[data-try]")) {
    button.addEventListener("click", () => {
      run(button.dataset.try);
      input.focus();
    });
  }

  // The last commands of this sandbox, as Valkey keeps them (a reload, a second tab).
  getJSON("/api/console").then((data) => {
    if (!data || log.children.length) return; // the learner already typed: keep their order
    for (const item of data.transcript || []) {
      entry(item);
      remember(item.command);
    }
  });
}

const root = document.querySelector("[data-console]");
if (root) start(root);
