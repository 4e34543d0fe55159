"""What the failure-policy widget draws: both its flows, the main one at home and the linked
(cross-queue) one whose child is in mail, read from both queues' views, with the readout in words."""

from __future__ import annotations

import msgspec

from server.widgets import flow, outbox_entries
from server.widgets.base import Description
from server.widgets.view import Moment, QueueView

HOME, MAIL = "failure-policy", "failure-policy.mail"
PARENT = "JOBparent"
CHILDREN = ("JOBchild1", "JOBchild2", "JOBchild3")
LINKED, REMOTE = "JOBlinked", "JOBremote"  # the cross-queue flow: parent here, child in mail
WORDS = {"fp": "fail the parent", "id": "ignore the dependency"}


def entry_words(raw: str, view: QueueView, whole: bool = False) -> str:
    """An outbox entry of `view`'s queue in words, judged as the outbox widget judges one."""
    seen = outbox_entries.judge(raw, view.queue, whole=whole)
    if (entry := seen.entry) is None:
        return f"{seen.verdict} ({seen.why}): {raw[:40]}…"
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


def child_json(view: QueueView, child: flow.ChildCard) -> Child:
    fields = view.fields(child.id)
    return flow.card(Child, child, policy=fields.get("parent_policy"), error=fields.get("last_error"),
                     attempts=fields.get("attempts"))


def parent_json(home: QueueView, parent: flow.ParentCard) -> Parent:
    return flow.card(Parent, parent, queue=HOME, failed_child=home.fields(parent.id).get("failed_child"))


def tally(children: list[flow.ChildCard]) -> str:
    """Where the main flow's children are: `1 died at the cap, 2 waiting in pending`."""
    kinds = (("died at the cap", lambda c: c.state == "dead"),
             ("completed", lambda c: c.state is None and c.counted == "processed"),
             ("waiting in pending", lambda c: c.set == "pending"),
             ("scheduled for a retry", lambda c: c.state == "scheduled"),
             ("claimed, in active", lambda c: c.set == "active"),
             ("gone (no row, not counted)", lambda c: c.state is None and c.counted is None))
    return ", ".join(f"{n} {words}" for words, test in kinds if (n := sum(1 for c in children if test(c))))


def describe(moment: Moment, policy: str, variant: str) -> Description:
    """Both flows, the main one and the linked (cross-queue) one, from both queues' views."""
    home, mail = moment.view(HOME), moment.view(MAIL)
    main = flow.read_flow(home, PARENT, [(home, c) for c in CHILDREN])
    linked = flow.read_flow(home, LINKED, [(mail, REMOTE)])
    children = [child_json(home, c) for c in main.children]
    tokens = sorted({c.policy for c in children if c.policy})
    # `fp (fail the parent)`; an unknown token says what it resolves to
    words = [f"{t} ({WORDS[t]})" if t in WORDS else f"{t} (unknown: it resolves to fp, {WORDS['fp']})"
             for t in tokens]
    said = (f"The child rows say parent_policy {', '.join(words[:-1])}{' and ' if len(words) > 1 else ''}"
            f"{words[-1]}" if words else "No child row is left to read a token from")
    waiting = [entry_words(raw, mail) for raw in mail.items("flow:outbox")]
    outbox = (f"mail's outbox holds {flow.plural(len(waiting), 'entry', 'entries')} ({'; '.join(waiting)})"
              if waiting else "mail's outbox is empty")
    readout = (f"{said}. {tally(main.children)} → {main.counter()}, :ignored holds {len(main.parent.ignored)}; "
               f"{main.parent.fate()}. Cross-queue: {REMOTE} in {MAIL}: {linked.children[0].where}; {outbox}; "
               f"{LINKED}: {linked.parent.fate()}.")
    return Description(readout, Picture(
        policy=policy, variant=variant, tokens=tokens, parent=parent_json(home, main.parent),
        children=children, linked=Linked(parent=parent_json(home, linked.parent),
                                         child=child_json(mail, linked.children[0]), outbox=waiting)))
