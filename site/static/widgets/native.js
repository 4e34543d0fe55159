// native.js — the native refusal. Draws the flow and the flat job as the
// snapshot read them, and the last line sent: the command line, Valkey's
// reply and the queue's keys before and after, all as the server recorded
// them in Valkey. Whether anything changed is the server's byte comparison.
import { register } from "./lab.js";
import { $, el, keyName, parentCard, jobCard, shortName } from "./cards.js";
import { formatValue } from "./panels.js";

function keyTable(caption, keys, role, marked) {
  const table = el("table", "keys");
  table.dataset.role = role;
  table.createCaption().textContent = `${caption} · ${keys.length} key${keys.length === 1 ? "" : "s"}`;
  const head = table.createTHead().insertRow();
  for (const label of ["key", "type", "value"]) {
    const th = el("th", "", label);
    th.scope = "col";
    head.append(th);
  }
  const body = table.createTBody();
  for (const key of keys) {
    const row = body.insertRow();
    row.dataset.key = key.name;
    if (marked.has(key.name)) row.classList.add("changed");
    const name = el("td", "key-name");
    name.append(keyName(shortName(key.name)));
    row.append(name, el("td", "key-type", key.type), el("td", "key-value", formatValue(key)));
  }
  return table;
}

function lastLine(last) {
  const box = el("div", "native-sent");
  if (!last) {
    box.append(el("p", "hint", "Nothing sent yet: press one of the buttons."));
    return box;
  }
  box.append(el("h4", "", "The line sent"));
  const line = el("pre", "native-line");
  line.append(el("code", "", last.line));
  line.dataset.role = "line";
  line.tabIndex = 0;
  const reply = el("p", `native-reply${last.error ? " is-error" : ""}`);
  reply.append(el("span", "hint", "Valkey's reply: "));
  const said = el("code", "", last.reply);
  said.dataset.role = "reply";
  reply.append(said);
  const moved = new Set(last.changes.map((c) => c.name));
  const verdict = el("p", "native-verdict", last.unchanged
    ? "Nothing changed: every key is byte-for-byte what it was (DUMP compared)."
    : `Changed: ${last.changes.map((c) => `${shortName(c.name)} (${c.kind})`).join(", ")}.`);
  verdict.dataset.role = "verdict";
  const tables = el("div", "native-keys");
  tables.append(keyTable("Before", last.before, "keys-before", moved), keyTable("After", last.after, "keys-after", moved));
  box.append(line, reply, verdict, tables);
  return box;
}

function render(root, snapshot) {
  const { parent, child, flat, executor, last } = snapshot.picture;
  const box = el("div", "flow-picture");
  const deps = el("span", "job-sets", `:dependencies = ${parent.dependencies ?? "—"}`);
  box.append(parentCard(parent, { extra: [deps] }));
  const list = el("ul", "children");
  list.setAttribute("aria-label", "The child and the flat job");
  for (const [job, role] of [[child, "child-state"], [flat, "flat-state"]]) {
    const item = el("li");
    item.append(jobCard(job, { role }));
    list.append(item);
  }
  box.append(list);
  const parts = [box];
  if (executor === "absent") {
    const note = el("p", "picture-note", "This Valkey has no EMQ module loaded: the native executor is absent here.");
    note.dataset.role = "executor";
    parts.push(note);
  }
  parts.push(lastLine(last));
  $(root, "picture").replaceChildren(...parts);
}

register("native", render);
