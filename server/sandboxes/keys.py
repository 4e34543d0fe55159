"""The names of the site's own keys (`lab:…`), beside the learners' `emq:…` ones.

A widget queue `<sandbox>.<part>` has its learner keys `emq:{<sandbox>.<part>}:…`
(EchoMQ's grammar) and, in the same hashtag (so one slot, one script), the
site's keys about it: its lab state, its lock, the index of extra key names a
console wrote, and the bytes those writes added. A sandbox has two records
of its own, on its own slot. Learners never reach `lab:` keys: their Valkey
ACL user covers `emq:{<sandbox>.…}` only.
"""

from __future__ import annotations

from typing import Final

# Every live sandbox, scored by its last activity (ms): the reaper walks it.
REGISTRY_KEY: Final = "lab:sandboxes"


def state_key(queue: str) -> str:
    """The widget's lab state (hash): landed, ver, the last outcome, kept choices."""
    return f"lab:{{{queue}}}:state"


def lock_key(queue: str) -> str:
    """One action at a time on the widget whose first queue this is."""
    return f"lab:{{{queue}}}:lock"


def index_key(queue: str) -> str:
    """Extra key names of the queue that no rule finds (a console wrote them)."""
    return f"lab:{{{queue}}}:index"


def spent_key(queue: str) -> str:
    """The bytes the console's writes added to the queue (its Reset frees them)."""
    return f"lab:{{{queue}}}:spent"


def meta_key(sandbox: str) -> str:
    """The sandbox's activity record: last seen, the widget last acted on, the page."""
    return f"lab:{{{sandbox}}}:meta"


def progress_key(sandbox: str) -> str:
    """The learner's progress record (server/sandboxes/progress.py)."""
    return f"lab:{{{sandbox}}}:progress"


def queue_lab_keys(queue: str) -> list[str]:
    """Every `lab:` key one queue may have."""
    return [state_key(queue), lock_key(queue), index_key(queue), spent_key(queue)]
