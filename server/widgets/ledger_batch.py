"""The ledger's batches, the learner's own batch as a typed body, the ledger's lab
state, and one flow's card read back from Valkey.

Flows name their children's queues relative to the ledger; `as_flow` maps them
into the sandbox at the last moment, so a batch never names a key outside it.
A learner's ids are not `job_ids`, so `index_commands` lists their rows in the
queue's index, where the read and Reset's clear find them.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from typing import Annotated, Any, Literal

import msgspec

from server.emq import keyspace
from server.sandboxes import keys
from server.settings import Settings
from server.widgets import flow
from server.widgets.base import FATES, Body
from server.widgets.view import QueueView

# The limits a learner's batch is held to (an action's body type is fixed at import).
LIMITS = Settings.from_env()
ID_CHARS = 256  # past the gate's 128, so an over-long id still reaches the gate and is refused there

LEDGER_QUEUES = ("orders", "mail", "billing")  # orders first: every parent's queue
Rel = Literal["orders", "mail", "billing"]
FLOW4_CHILD_FIXED = "JOB0KHTOWnGLuK"


def _flow(parent: str, what: str, *children: tuple[str, str | None]) -> dict[str, Any]:
    return {"parent": {"id": parent, "payload": what},
            "children": [{"id": child, "payload": f"{what}, step {i}", **({"queue": queue} if queue else {})}
                         for i, (child, queue) in enumerate(children, 1)]}


FIXED: tuple[dict[str, Any], ...] = (
    # 1: same-queue, lands whole in one enqueue_flow
    _flow("JOB0KHTOWnGLuA", "pack order A", ("JOB0KHTOWnGLuB", None), ("JOB0KHTOWnGLuC", None)),
    # 2: cross-queue (a child in mail), lands parent first
    _flow("JOB0KHTOWnGLuD", "confirm order D", ("JOB0KHTOWnGLuE", "mail"), ("JOB0KHTOWnGLuF", None)),
    # 3: same-queue, one child well-formed but not JOB: the kind law refuses it before any write
    _flow("JOB0KHTOWnGLuG", "pack order G", ("JOB0KHTOWnGLuH", None), ("TASK0KHTOWnGLuI", None)),
    # 4: cross-queue, its second child not JOB: stops partway, its parent held
    _flow("JOB0KHTOWnGLuJ", "bill order J", ("JOB0KHTOWnGLuL", "billing"), ("TASK0KHTOWnGLuK", "billing")),
)
# Flow 4 as "Retry flow 4" sends it: the same ids, the bad child made a JOB id.
FLOW4_CORRECTED = _flow("JOB0KHTOWnGLuJ", "bill order J", ("JOB0KHTOWnGLuL", "billing"), (FLOW4_CHILD_FIXED, "billing"))
# One well-formed flow, then one whose child id cannot be a key: the gate
# refuses the whole batch before the first flow is written.
BAD_ID = "JOB bad}"
BAD_BATCH: tuple[dict[str, Any], ...] = (
    _flow("JOB0KHTOWnGLuM", "pack order M", ("JOB0KHTOWnGLuN", None), ("JOB0KHTOWnGLuO", None)),
    _flow("JOB0KHTOWnGLuP", "pack order P", (BAD_ID, None)),
)
# What the form of "Your own batch" holds when the page opens (and the tour runs).
OWN_SAMPLE: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    ("JOBmine1", (("JOBmine2", "orders"), ("JOBmine3", "mail"))),
    ("JOBmine4", (("JOBmine5", "billing"), ("JOBmine6", "billing"))),
    ("JOBmine7", (("JOBmine8", "orders"),)),
)


def well_formed(job_id: str) -> bool:
    return keyspace.ID_RE.fullmatch(job_id) is not None


class OwnJob(msgspec.Struct, forbid_unknown_fields=True):
    id: Annotated[str, msgspec.Meta(max_length=ID_CHARS)]
    payload: Annotated[str, msgspec.Meta(max_length=LIMITS.max_payload_bytes)] = ""

    def __post_init__(self) -> None:
        # the cap is in bytes, which a length in characters does not bound
        size = len(self.payload.encode())
        if size > LIMITS.max_payload_bytes:
            raise ValueError(f"a payload of {size} bytes; at most {LIMITS.max_payload_bytes} are taken")


class OwnChild(OwnJob, forbid_unknown_fields=True, kw_only=True):
    queue: Rel = "orders"
    fail_parent_on_failure: bool = False
    ignore_dependency_on_failure: bool = False


class OwnFlow(msgspec.Struct, forbid_unknown_fields=True):
    parent: OwnJob
    children: Annotated[list[OwnChild], msgspec.Meta(min_length=1, max_length=LIMITS.max_children)]

    def __post_init__(self) -> None:
        # one id twice in one queue of a flow: the library's FlowShapeError, answered here as a 400
        seen = {("orders", self.parent.id)}
        for child in self.children:
            if (child.queue, child.id) in seen:
                raise ValueError(f"job {child.id!r} appears twice in ledger.{child.queue} in one flow")
            seen.add((child.queue, child.id))


class OwnBatch(Body):
    flows: Annotated[list[OwnFlow], msgspec.Meta(min_length=1, max_length=LIMITS.max_flows)]


class PickBody(Body):
    flow: Annotated[int, msgspec.Meta(ge=1, le=LIMITS.max_flows)]


def sample_batch() -> list[dict[str, Any]]:
    """OWN_SAMPLE as the body's `flows` (the tour's replay of Run your batch)."""
    return [{"parent": {"id": p, "payload": f"your flow {f}"},
             "children": [{"id": c, "payload": f"your flow {f}, child {i}", "queue": q} for i, (c, q) in
                          enumerate(kids, 1)]} for f, (p, kids) in enumerate(OWN_SAMPLE, 1)]


@dataclass(frozen=True)
class Planned:
    """One flow of the batch on the ledger: its parent and (child id, relative queue)."""

    parent: str
    children: tuple[tuple[str, str], ...]

    @property
    def path(self) -> str:
        return "same-queue" if all(rel == "orders" for _, rel in self.children) else "cross-queue"

    def ids(self, rel: str) -> list[str]:
        found = [self.parent] if rel == "orders" else []
        return found + [c for c, q in self.children if q == rel]

    def as_json(self) -> list[Any]:
        return [self.parent, [list(c) for c in self.children]]


def planned(spec: dict[str, Any]) -> Planned:
    return Planned(spec["parent"]["id"], tuple((c["id"], c.get("queue") or "orders") for c in spec["children"]))


def entries_of(plans: Sequence[Planned], result: Sequence[Any]) -> list[list[Any] | None]:
    """Each flow's entry in the result (which lists the landed flows in input
    order, so a pointer walks it once and two flows with one parent id stay apart)."""
    found: list[list[Any] | None] = []
    at = 0
    for plan in plans:
        hit = at < len(result) and result[at][0] == plan.parent
        found.append(list(result[at]) if hit else None)
        at += hit
    return found


FIXED_PLAN = tuple(planned(f) for f in FIXED)


def _json(raw: str | None, default: Any) -> Any:
    try:
        return json.loads(raw) if raw else default
    except ValueError:
        return default


@dataclass
class LedgerState:
    """The ledger's lab state: how the batch got there and what the adds returned."""

    mode: str = "step"  # step (Next flow), batch (Run the batch), own (Run your batch)
    move: int = 0  # flows tried
    result: list[Any] = field(default_factory=list)  # [[parent, [children]], ...] as the adds returned
    errors: dict[str, str] = field(default_factory=dict)  # flow number -> flows.add's refusal (step mode)
    retry: list[Any] | None = None  # what the retry of flow 4 returned
    picked: int | None = None
    batch: list[Any] = field(default_factory=list)  # the learner's own batch, as Planned.as_json
    refused: str = ""  # the gate's words when the learner's batch was refused whole

    @classmethod
    def of(cls, state: dict[str, str]) -> LedgerState:
        picked = state.get("picked", "")
        return cls(mode=state.get("mode") or "step", move=int(state.get("move") or 0),
                   result=_json(state.get("result"), []), errors=_json(state.get("errors"), {}),
                   retry=_json(state.get("retry"), None), picked=int(picked) if picked.isdecimal() else None,
                   batch=_json(state.get("batch"), []), refused=state.get("refused", ""))

    def plans(self) -> tuple[Planned, ...]:
        if self.mode == "own":
            return tuple(Planned(str(p), tuple((str(c), str(q)) for c, q in kids)) for p, kids in self.batch)
        return (*FIXED_PLAN[:3], planned(FLOW4_CORRECTED) if self.retry else FIXED_PLAN[3])

    def kept(self) -> dict[str, Any]:
        return {**asdict(self), "retry": self.retry or "", "picked": self.picked or ""}


ROW_KEYS = ("", ":dependencies", ":processed", ":ignored")  # a row and the subkeys a flow gives it


def index_commands(plans: Sequence[Planned], queue_of: Callable[[str], str]) -> list[tuple[Any, ...]]:
    """SADDs listing every row name `plans` may create in its queue's index (`lab:{q}:index`)."""
    commands: list[tuple[Any, ...]] = []
    for rel in LEDGER_QUEUES:
        queue = queue_of(rel)
        ids = dict.fromkeys(i for p in plans for i in p.ids(rel) if well_formed(i))
        names = [keyspace.job_key(queue, i) + sub for i in ids for sub in ROW_KEYS]
        if names:
            commands.append(("SADD", keys.index_key(queue), *names))
    return commands


class LedgerChild(msgspec.Struct, kw_only=True):
    """A child of a flow; an ill-formed batch's child never became a key, so it has no
    `counted` nor `entry` (UNSET: the JSON leaves them out, as it always did)."""

    id: str
    queue: str  # the child's queue, relative to the ledger ("orders")
    state: str | None
    set: str | None
    where: str
    counted: flow.Counted | msgspec.UnsetType | None = msgspec.UNSET
    entry: flow.EntryState | msgspec.UnsetType | None = msgspec.UNSET


class FlowCard(msgspec.Struct, kw_only=True):
    number: int
    parent: str
    path: str  # same-queue or cross-queue
    entry: list[object] | None  # its [parent, [children]] in the add's result
    tried: bool
    error: str | None
    state: str | None
    dependencies: int | None
    processed: int
    sets: list[str]
    children: list[LedgerChild]
    word: str = ""  # the parent in one word
    line: str = ""  # the flow in one sentence


def card(n: int, plan: Planned, views: dict[str, QueueView], entry: list[object] | None,
         tried: bool, error: str | None) -> FlowCard:
    """One flow as Valkey holds it now, beside what the add returned for it: its parent in one word, in one line."""
    s = FlowCard(number=n, parent=plan.parent, path=plan.path, entry=entry, tried=tried, error=error,
                 state=None, dependencies=None, processed=0, sets=[], children=[])
    if all(well_formed(i) for i in (plan.parent, *(c for c, _ in plan.children))):
        found = flow.read_flow(views["orders"], plan.parent, [(views[q], c) for c, q in plan.children])
        p = found.parent
        s.state, s.dependencies, s.processed, s.sets = p.state, p.dependencies, len(p.processed), p.sets
        s.children = [flow.card(LedgerChild, c, queue=rel) for c, (_, rel) in zip(found.children, plan.children)]
    else:
        # an ill-formed id never became a key: the gate refused the batch it was in
        s.children = [LedgerChild(id=c, queue=q, state=None, set=None, where="no row" if well_formed(c)
                                  else "ill-formed: no key can be built for it") for c, q in plan.children]
    if s.entry:
        kids = s.entry[1] if len(s.entry) > 1 and isinstance(s.entry[1], list) else []
        found_in = f"in the result as ({s.entry[0]}, [{', '.join(map(str, kids))}])"
    else:
        found_in = ("not in the result" + (f" (refused: {s.error})" if s.error else "")) if tried else "not added yet"
    if s.state is None:
        s.word, parent = ("no row" if tried else "not added yet"), f"parent {s.parent}: no row"
    else:
        deps = "no :dependencies" if s.dependencies is None else f":dependencies = {s.dependencies}"
        where = f"in {', '.join(s.sets)}" if s.sets else "in no state set"
        s.word, parent = FATES.get(s.state, s.state), f"parent {s.parent}: {s.state}, {deps}, {where}"
    kids_said = "; ".join(f"{c.id} (ledger.{c.queue}) {c.where}" for c in s.children)
    s.line = f"Flow {s.number} ({s.path}) is {found_in}; {parent}; children: {kids_said}."
    return s
