// forms.js — forms whose action takes a structured body, composed from the
// fields as typed: `<form data-send="<action>" data-compose="<name>">`. The
// server's gates judge every value (an ill-formed id is refused in words).

/** The ledger's own batch: up to three flows of up to three children. */
function batch(form) {
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
  // the spoil option only rewrites one id: flow 2's last child
  const spoil = data.get("spoil");
  const target = flows[1] && flows[1].children[flows[1].children.length - 1];
  if (target && spoil === "kind") target.id = target.id.replace(/^JOB/, "TASK");
  if (target && spoil === "gate") target.id = `${target.id} bad}`;
  return { flows };
}

export const COMPOSE = new Map([["batch", batch]]);
