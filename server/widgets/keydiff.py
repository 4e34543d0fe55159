"""What one action changed in a queue: the keys read before and after it.

The fan-in's guards (a stale token, a late completion) are shown by what they
did not write; a sentence that says "nothing changed" must come from two real
readings of the keys, not from the code's belief.
"""

from __future__ import annotations

from typing import Any

from server.widgets.snapshot import QueueView


def _index(view: QueueView) -> dict[str, tuple[str, Any]]:
    # the key's name after its hashtag, as the trace and the panels say it
    return {k.name.partition("}")[2].lstrip(":"): (k.type, k.value) for k in view.keys}


def key_diff(before: QueueView, after: QueueView) -> list[str]:
    """Each key created, changed or removed between the two readings, in words."""
    old, new = _index(before), _index(after)
    out = [f"{name} new" for name in new if name not in old]
    out += [f"{name} changed" for name in new if name in old and old[name] != new[name]]
    out += [f"{name} gone" for name in old if name not in new]
    return out


def diff_words(changes: list[str]) -> str:
    """The diff for an outcome sentence."""
    if not changes:
        return "no key changed"
    return "keys changed: " + ", ".join(changes)
