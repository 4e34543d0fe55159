"""The names of the site's own keys (`lab:…`): a queue's share its hashtag (one slot, one script);
learners never reach them (their ACL user covers `emq:{<sandbox>.…}` only)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

# Every live sandbox, scored by its last activity (ms): the reaper walks it.
REGISTRY_KEY: Final = "lab:sandboxes"


def _named(pattern: str) -> Callable[[str], str]:
    return pattern.format


# A widget queue's keys, by the queue's name:
state_key = _named("lab:{{{}}}:state")  # its lab state (hash): landed, ver, the last outcome, kept choices
lock_key = _named("lab:{{{}}}:lock")  # one action at a time on the widget whose first queue this is
index_key = _named("lab:{{{}}}:index")  # extra key names of the queue that no rule finds (a console wrote them)
spent_key = _named("lab:{{{}}}:spent")  # the bytes the console's writes added to the queue (its Reset frees them)
# A sandbox's own records, by its id:
meta_key = _named("lab:{{{}}}:meta")  # activity: last seen, the widget last acted on, the page, presence
progress_key = _named("lab:{{{}}}:progress")  # the learner's progress record (progress.py)
work_key = _named("lab:{{{}}}:work")  # the learner's kept scripts, one per exercise (progress.py)
# A class's, by its code (rooms.py), and a closed class's kept results:
room_key = _named("lab:room:{}")
learners_key = _named("lab:room:{}:learners")
answers_key = _named("lab:room:{}:answers")
votes_key = _named("lab:room:{}:votes")
results_key = _named("lab:results:{}")
