"""The outbox widget's lanes as its Pump sees them: each entry decoded, checked, worded.

An entry is data in the learner's keys (a console can write one), so only the
decoded entry is judged: poison when it does not decode, refused when it names
another outbox or a parent queue outside the sandbox. An entry longer than the
read carries (`view.CUT_BYTES`) that does not decode in the part read is
"unread": the Pump reads it whole, so only the Pump can judge it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Collection
from dataclasses import dataclass
from typing import Literal

import msgspec

from server.emq import keyspace, pump
from server.widgets import flow
from server.widgets.view import CUT_BYTES, QueueView

Verdict = Literal["waiting", "applied", "poison", "refused", "unread"]
BLOCKING: tuple[Verdict, ...] = ("poison", "refused")


@dataclass(frozen=True)
class Seen:
    raw: str
    verdict: Verdict
    entry: pump.OutboxEntry | None  # None: it does not decode
    why: str = ""  # for a poison or refused entry: the reason, in words

    def words(self, home: str) -> str:
        if self.entry is None:
            return f"{self.verdict} ({self.why}): {self.raw[:48]}{'…' if len(self.raw) > 48 else ''}"
        e = self.entry
        if self.verdict == "refused":
            return f"refused: {e.kind} {e.child} → {e.parent}, but {self.why}"
        where = "" if e.parent_queue == home else f" in {e.parent_queue.partition('.')[2]}"
        if self.verdict == "applied":
            return f"{e.kind} {e.child} → {e.parent}{where}, delivered already, not yet trimmed"
        return f"{e.kind} {e.child} → {e.parent}{where}, waiting for the Pump"


def judge(raw: str, queue: str, home: str = "", parent: str = "", counted: Collection[str] = (),
          whole: bool = False) -> Seen:
    """`raw`, an entry of `queue`'s outbox (`whole`: read whole, not through the picture's read):
    poison, refused, or deliverable (waiting, or applied already when `parent` in `home` counted its child)."""
    entry = pump.decoded(raw)
    if entry is None:
        # a cut may fall inside a character, which decodes to one of 1 to 3 bytes
        if not whole and len(raw.encode("utf-8", "surrogateescape")) >= CUT_BYTES - 2:
            return Seen(raw, "unread", None, f"longer than the {CUT_BYTES} bytes the picture reads; the Pump reads "
                                              "it whole")
        return Seen(raw, "poison", None, "it does not decode")
    try:
        pump.trusted(entry, queue, flow.trusted_by(queue.partition(".")[0]))  # `<sandbox>.<part>`
    except pump.PoisonEntry:
        why = ("its child queue is not this outbox's" if entry.child_queue != queue
               else "its parent queue is outside your sandbox")
        return Seen(raw, "refused", entry, why)
    mine = entry.parent_queue == home and entry.parent == parent
    return Seen(raw, "applied" if mine and entry.child in counted else "waiting", entry)


def blocked_why(seen: Seen) -> str:
    """Why the Pump stopped at this entry, in words."""
    if seen.verdict in ("poison", "unread"):
        return f"a poison entry ({seen.why})"
    if seen.verdict == "refused":
        return f"an entry it refused ({seen.why})"
    return f"an entry {seen.entry.parent if seen.entry else 'its parent'} could not take (no parent row)"


@dataclass(frozen=True)
class Lane:
    """One child queue: its outbox, its poison list and its head counter, judged."""

    part: str
    queue: str
    entries: list[Seen]
    aside: list[Seen]
    head_count: int  # aged ticks the current head has blocked (0: not counted)

    @property
    def head_blocks(self) -> bool:
        return bool(self.entries) and self.entries[0].verdict in BLOCKING

    def summary(self, max_blocked: int) -> str:
        """`outbox.mail: 1 poison, 1 waiting; its head blocks (1 of 2 aged ticks)`."""
        if not self.entries:
            return f"{self.part}: empty"
        counts = Counter[str](s.verdict for s in self.entries)
        said = [f"{counts[v]} {words}" for v, words in (("waiting", "waiting"), (
            "applied", "delivered, not yet trimmed"), ("poison", "poison"), ("refused", "refused"),
            ("unread", "too long to read here")) if counts[v]]
        line = f"{self.part}: " + ", ".join(said)
        if self.head_blocks:
            line += "; its head blocks"
            if self.head_count:
                line += f" (blocked {self.head_count} of {max_blocked} aged ticks)"
        return line

    def waits(self, child: str) -> flow.EntryState | None:
        """"waiting" when the Pump would deliver the child's entry (a refused one never will)."""
        return "waiting" if any(s.verdict == "waiting" and s.entry and s.entry.child == child
                                for s in self.entries) else None

    def as_json(self, home: str, children: list[LaneChild]) -> LaneCard:
        return LaneCard(part=self.part, slot=keyspace.queue_slot(self.queue), head_count=self.head_count,
                        outbox=[EntryCard(text=s.words(home), verdict=s.verdict) for s in self.entries],
                        poison=[EntryCard(text=s.words(home), verdict=s.verdict) for s in self.aside],
                        children=children)


class EntryCard(msgspec.Struct, kw_only=True):
    text: str
    verdict: str


class LaneChild(flow.ChildCard, kw_only=True):
    queue: str  # the lane's part


class LaneCard(msgspec.Struct, kw_only=True):
    """One child queue as the outbox's picture draws it."""

    part: str
    slot: int
    head_count: int
    outbox: list[EntryCard]
    poison: list[EntryCard]
    children: list[LaneChild]


def lane_of(view: QueueView, home: str, parent: str, counted: set[str]) -> Lane:
    judged = [judge(raw, view.queue, home, parent, counted) for raw in view.items("flow:outbox")]
    aside = [judge(raw, view.queue, home, parent, counted) for raw in view.items("flow:outbox:poison")]
    head = view.get("flow:outbox:head")
    fields = head.value if head is not None and isinstance(head.value, dict) else {}
    # The counter belongs to one entry: it speaks of the head only while that entry is still the head.
    counting = bool(judged) and fields.get("entry") == judged[0].raw
    try:
        count = int(fields.get("count", 0)) if counting else 0
    except ValueError:
        count = 0
    return Lane(view.part, view.queue, judged, aside, count)
