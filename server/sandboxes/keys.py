"""The names of the site's own keys (`lab:…`): a queue's share its hashtag (one slot, one script);
learners never reach them (their ACL user covers `emq:{<sandbox>.…}` only)."""

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


def work_key(sandbox: str) -> str:
    """The learner's kept scripts, one per exercise (server/sandboxes/work.py)."""
    return f"lab:{{{sandbox}}}:work"
