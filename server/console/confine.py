"""Keys as the learner writes them (``emq:{fanin}:…``) -> keys of the line's sandbox; another
sandbox's key or one outside the grammar is refused in words (the boundary is the ACL user's
NOPERM). Writes reach the course's queues only, never the outbox."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from server.console.allow import Refusal
from server.emq.keyspace import ID_RE, grammar_type

KEY_RE: Final = re.compile(r"emq:\{(?P<queue>[^{}]*)\}:(?P<rest>.*)", re.S)
SUFFIX_RE: Final = re.compile(r"[!-~]{0,256}")  # printable ASCII, no spaces
SANDBOXED: Final = re.compile(r"(?P<sandbox>s[a-z0-9]{10})(?:\.(?P<rest>.*))?", re.S)
# A sandbox's queue named inside a value (JSON, a list of names, …).
FOREIGN: Final = re.compile(r"(?<![A-Za-z0-9_.-])(s[a-z0-9]{10})\.[A-Za-z0-9_-]")
WRITTEN_BY_SCRIPTS: Final = re.compile(r"flow:outbox(:.*)?")
UNICODE_ESCAPE: Final = re.compile(r"\\u([0-9a-fA-F]{4})")


@dataclass(frozen=True)
class Key:
    real: str  # the key as Valkey holds it
    queue: str  # the queue under the sandbox, e.g. "fanin", "outbox.orders"
    suffix: str  # what follows the hashtag, e.g. "job:JOBparent"


@dataclass(frozen=True)
class Confinement:
    sandbox: str  # the sandbox the request acts in
    writable: frozenset[str]  # the course's queues, relative to the sandbox

    def queue(self, name: str) -> str:
        """A queue name as written -> its name under the sandbox ("fanin")."""
        found = SANDBOXED.fullmatch(name)
        if found:
            if found["sandbox"] != self.sandbox:
                raise Refusal(403, f"{_show(name)} is a queue of another sandbox; the console reaches yours only.")
            name = found["rest"] or ""
        if not ID_RE.fullmatch(name):
            raise Refusal(400, f"{_show(name)} is not a queue name: 1-128 characters of A-Z a-z 0-9 _ . -")
        return name

    def key(self, text: str, *, write: bool, shape: str | None = None, base: bool = False) -> Key:
        """The sandbox's key for `text`; `base`: the prefix emq:{q}: is accepted."""
        found = KEY_RE.fullmatch(text)
        if not found:
            raise Refusal(403, f"{_show(text)} is outside every sandbox: the console reaches keys written "
                               "emq:{<queue>}:<suffix>, e.g. emq:{fanin}:pending.")
        queue, suffix = self.queue(found["queue"]), found["rest"]
        if not SUFFIX_RE.fullmatch(suffix) or (not suffix and not base):
            raise Refusal(400, f"{_show(text)}: the part after the hashtag must be 1-256 printable characters,"
                                " no spaces.")
        if write:
            self.check_writable(queue, suffix, shape)
        return Key(f"emq:{{{self.sandbox}.{queue}}}:{suffix}", queue, suffix)

    def check_writable(self, queue: str, suffix: str, shape: str | None) -> None:
        if queue not in self.writable:
            raise Refusal(403, "the console writes only the course's queues in your sandbox "
                               f"({', '.join(sorted(self.writable))}); {queue} is not one of them.")
        if WRITTEN_BY_SCRIPTS.fullmatch(suffix):
            raise Refusal(403, "the outbox is written by complete and fail only: the Pump trusts every entry it holds.")
        kind = grammar_type(suffix)
        if shape is not None and kind is not None and shape != kind:
            raise Refusal(403, f"emq:{{{queue}}}:{suffix} is a {kind} in the key grammar; "
                               f"this command would make it a {shape}.")

    def queue_value(self, text: str) -> str:
        """A value naming a queue (a row's parent_queue, a script's queue argument)."""
        if text == "":
            return text
        queue = self.queue(text)
        if queue not in self.writable:
            raise Refusal(403, f"{_show(text)} is not one of the course's queues ({', '.join(sorted(self.writable))}).")
        return f"{self.sandbox}.{queue}"

    def check_value(self, text: str) -> None:
        """Refuse a value naming another sandbox's queue, plainly or in JSON's \\u escapes (not the
        boundary, but clearer than NOPERM later)."""
        for seen in (text, UNICODE_ESCAPE.sub(lambda m: chr(int(m[1], 16)), text)):
            for found in FOREIGN.finditer(seen):
                if found[1] != self.sandbox:
                    raise Refusal(403, "an argument names a queue of another sandbox; the console reaches yours only.")

    def pattern(self, text: str) -> str:
        """A SCAN/KEYS pattern, moved into the sandbox: `*` is every key of it."""
        if text == "*":
            return f"emq:{{{self.sandbox}.*"
        if not text.startswith("emq:{"):
            raise Refusal(403, "a pattern starts with emq:{ (e.g. emq:{fanin}:*),"
                                " or is * for every key of your sandbox.")
        rest = text[len("emq:{"):]
        if rest.startswith(self.sandbox + "."):
            rest = rest[len(self.sandbox) + 1:]
        elif (other := SANDBOXED.match(rest)) and other["rest"] is not None:
            raise Refusal(403, "that pattern names another sandbox; the console reaches yours only.")
        return f"emq:{{{self.sandbox}.{rest}"

    def short(self, real: str) -> str:
        """A key of the sandbox as the learner writes it: emq:{fanin}:…"""
        prefix = f"emq:{{{self.sandbox}."
        return "emq:{" + real[len(prefix):] if real.startswith(prefix) else real


def _show(text: str) -> str:
    cut = text if len(text) <= 80 else text[:79] + "…"
    return repr(cut) if not cut or not cut.isprintable() else cut  # an empty name is quoted, not blank
