"""The failure-policy widget's two flows, and how each reads back from Valkey.

The main flow lands `uniform` (every child on the learner's policy) or `mixed`
(`fp`, both flags so `id`, and an unknown token `skip` that resolves to
`fp`); a cross-queue flow beside it has its one child in `failure-policy.mail`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from server.widgets import flow, outbox_entries
from server.widgets.view import Moment, QueueView

HOME, MAIL = "failure-policy", "failure-policy.mail"
PARENT = "JOBparent"
CHILDREN = ("JOBchild1", "JOBchild2", "JOBchild3")
LINKED, REMOTE = "JOBlinked", "JOBremote"  # the cross-queue flow: parent here, child in mail
POLICIES = ("fp", "id")
VARIANTS = ("uniform", "mixed")
WORDS = {"fp": "fail the parent", "id": "ignore the dependency"}
ERROR = "card declined"
UNKNOWN_TOKEN = "skip"  # what an old or foreign writer might leave in parent_policy


def choices(state: dict[str, str]) -> tuple[str, str]:
    policy, variant = state.get("policy", ""), state.get("variant", "")
    return (policy if policy in POLICIES else "fp", variant if variant in VARIANTS else "uniform")


def flag_for(policy: str) -> dict[str, bool]:
    return {"ignore_dependency_on_failure": True} if policy == "id" else {"fail_parent_on_failure": True}


def flow_spec(policy: str, variant: str) -> dict[str, Any]:
    if variant == "mixed":
        flags: list[dict[str, bool]] = [
            {"fail_parent_on_failure": True},
            {"fail_parent_on_failure": True, "ignore_dependency_on_failure": True},
            {"fail_parent_on_failure": True},  # its row's token is then overwritten with UNKNOWN_TOKEN
        ]
    else:
        flags = [flag_for(policy)] * len(CHILDREN)
    return {"parent": {"id": PARENT, "payload": "settle invoice 7"},
            "children": [{"id": c, "payload": f"charge {i}", **f} for i, (c, f) in enumerate(zip(CHILDREN, flags), 1)]}


def linked_spec(policy: str, mail_queue: str) -> dict[str, Any]:
    return {"parent": {"id": LINKED, "payload": "send the receipt"},
            "children": [{"id": REMOTE, "payload": "mail the receipt", "queue": mail_queue, **flag_for(policy)}]}


def entry_words(raw: str, view: QueueView) -> str:
    """An outbox entry of `view`'s queue in words, judged as the outbox widget judges one."""
    seen = outbox_entries.judge(raw, view.queue)
    if (entry := seen.entry) is None:
        return f"poison (it does not decode): {raw[:40]}…"
    if seen.verdict == "refused":
        return f"refused: {entry.kind} {entry.child} → {entry.parent} names a queue outside your sandbox"
    return f"{entry.kind} {entry.child} → {entry.parent} (policy {entry.policy}), waiting for the Pump"


class Child(flow.ChildCard, kw_only=True):
    policy: str | None  # its row's parent_policy token
    error: str | None
    attempts: str | None


class Parent(flow.ParentCard, kw_only=True):
    failed_child: str | None


class Linked(msgspec.Struct, kw_only=True):
    """The cross-queue flow: its parent at home, its child in mail, mail's outbox in words."""

    parent: Parent
    child: Child
    outbox: list[str]


class Picture(msgspec.Struct, kw_only=True):
    policy: str
    variant: str
    tokens: list[str]  # the tokens the child rows hold
    parent: Parent
    children: list[Child]
    linked: Linked


def child_json(view: QueueView, child: flow.Child) -> Child:
    fields = view.fields(child.id)
    return child.card(Child, policy=fields.get("parent_policy"), error=fields.get("last_error"),
                      attempts=fields.get("attempts"))


def parent_json(reading: flow.FlowReading, part: str) -> Parent:
    return reading.parent.card(Parent, queue=part, failed_child=reading.parent.fields.get("failed_child"))


def flows_of(moment: Moment) -> tuple[QueueView, QueueView, flow.FlowReading, flow.FlowReading]:
    """Both queues' views, the main flow and the linked (cross-queue) one."""
    home, mail = moment.view(HOME), moment.view(MAIL)
    return (home, mail, flow.read_flow(home, PARENT, [(home, c) for c in CHILDREN]),
            flow.read_flow(home, LINKED, [(mail, REMOTE)]))


def picture(moment: Moment) -> Picture:
    home, mail, main, linked = flows_of(moment)
    policy, variant = choices(moment.state)
    children = [child_json(home, c) for c in main.children]
    return Picture(
        policy=policy, variant=variant,
        tokens=sorted({c.policy for c in children if c.policy}),
        parent=parent_json(main, HOME), children=children,
        linked=Linked(parent=parent_json(linked, HOME), child=child_json(mail, linked.children[0]),
                      outbox=[entry_words(raw, mail) for raw in mail.items("flow:outbox")]),
    )


def tally(children: list[flow.Child]) -> str:
    """Where the main flow's children are: `1 died at the cap, 2 waiting in pending`."""
    kinds = (("died at the cap", lambda c: c.state == "dead"),
             ("completed", lambda c: c.state is None and c.counted == "processed"),
             ("waiting in pending", lambda c: c.set == "pending"),
             ("scheduled for a retry", lambda c: c.state == "scheduled"),
             ("claimed, in active", lambda c: c.set == "active"),
             ("gone (no row, not counted)", lambda c: c.state is None and c.counted is None))
    return ", ".join(f"{n} {words}" for words, test in kinds if (n := sum(1 for c in children if test(c))))


def readout(moment: Moment) -> str:
    home, mail, main, linked = flows_of(moment)
    tokens = sorted({t for c in CHILDREN if (t := home.fields(c).get("parent_policy"))})
    # `fp (fail the parent)`; an unknown token says what it resolves to
    words = [f"{t} ({WORDS[t]})" if t in WORDS else f"{t} (unknown: it resolves to fp, {WORDS['fp']})" for t in tokens]
    said = (f"The child rows say parent_policy {', '.join(words[:-1])}{' and ' if len(words) > 1 else ''}{words[-1]}"
            if words else "No child row is left to read a token from")
    parent = main.parent
    line = (f"{said}. {tally(main.children)} → {main.counter()}, :ignored holds {len(parent.ignored)}; "
            f"{parent.fate()}.")
    waiting = mail.items("flow:outbox")
    outbox = (f"mail's outbox holds {flow.plural(len(waiting), 'entry', 'entries')} "
              f"({'; '.join(entry_words(raw, mail) for raw in waiting)})" if waiting else "mail's outbox is empty")
    return (f"{line} Cross-queue: {REMOTE} in {MAIL}: {linked.children[0].words()}; {outbox}; "
            f"{LINKED}: {linked.parent.fate()}.")
