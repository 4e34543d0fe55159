// console.js — the Valkey console: a command sent to POST /api/console, its
// reply printed as the server wrote it (as valkey-cli would). The transcript is
// kept in Valkey, so a reload or a second tab reads it back (GET /api/console).

const root = document.querySelector("[data-console]");
const MAX_ENTRIES = 200; // entries kept on the page; older ones scroll away

if (root) start(root);

function start(root) {
  const $ = (role) => root.querySelector(`[data-role="${role}"]`);
  const log = $("transcript");
  const form = $("form");
  const input = $("input");
  const history = [];
  let cursor = 0; // history index the arrows are on; history.length = the fresh line
  let draft = "";

  root.classList.add("is-live");

  function entry(item) {
    const box = document.createElement("div");
    box.className = `console-entry console-${item.kind || "reply"}`;
    const command = document.createElement("p");
    command.className = "console-command";
    const prompt = document.createElement("span");
    prompt.className = "console-prompt";
    prompt.setAttribute("aria-hidden", "true");
    prompt.textContent = "valkey> ";
    const typed = document.createElement("code");
    typed.textContent = item.command;
    command.append(prompt, typed);
    const reply = document.createElement("pre");
    reply.className = "console-reply";
    reply.dataset.kind = item.kind || "reply";
    reply.textContent = (item.reply_lines || []).join("\n");
    box.append(command, reply);
    log.append(box);
    while (log.children.length > MAX_ENTRIES) log.firstChild.remove();
    log.scrollTop = log.scrollHeight;
  }

  function remember(command) {
    if (command && history[history.length - 1] !== command) history.push(command);
    cursor = history.length;
    draft = "";
  }

  async function send(command) {
    root.setAttribute("aria-busy", "true");
    try {
      const response = await fetch("/api/console", {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ command }),
      });
      const data = await response.json();
      if (data.reply_lines) entry(data);
      else entry({ command, reply_lines: [`(refused) ${data.error || response.statusText}`], kind: "refused" });
    } catch (err) {
      entry({ command, reply_lines: ["(refused) the site is unreachable; try again in a moment"], kind: "refused" });
    } finally {
      root.removeAttribute("aria-busy");
    }
  }

  async function run(command) {
    if (!command.trim()) return;
    remember(command);
    input.value = "";
    await send(command);
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    run(input.value);
  });

  input.addEventListener("keydown", (event) => {
    if (event.key === "ArrowUp" && cursor > 0) {
      if (cursor === history.length) draft = input.value;
      cursor -= 1;
      input.value = history[cursor];
    } else if (event.key === "ArrowDown" && cursor < history.length) {
      cursor += 1;
      input.value = cursor === history.length ? draft : history[cursor];
    } else {
      return;
    }
    event.preventDefault();
    input.setSelectionRange(input.value.length, input.value.length);
  });

  root.querySelectorAll("button[data-try]").forEach((button) => {
    button.addEventListener("click", () => {
      input.value = button.dataset.try;
      run(button.dataset.try);
      input.focus();
    });
  });

  // The last commands of this sandbox, as Valkey keeps them (a reload, a second tab).
  fetch("/api/console", { credentials: "same-origin" })
    .then((response) => (response.ok ? response.json() : { transcript: [] }))
    .then((data) => {
      if (log.children.length) return; // the learner already typed: keep their order
      for (const item of data.transcript || []) {
        entry(item);
        remember(item.command);
      }
    })
    .catch(() => {});
}
