"""A run's keys as the course writes them: ``emq:{q}:job:JOBreport``.

On the grader every queue of a check is named ``<run>.<check>.<role>``
(``emq:{rh7aloipi3x.4.reports}:pending``), so that one run's user can reach
its own keys only. The learner never chose those names: the scripts' headers
and the dives write a queue's keys as ``emq:{q}:…`` (and a flow's parent
queue, where it differs, as ``emq:{pq}:…``, as ``flow_deliver``'s header
does). Everything a run shows the learner — each check's sentence, the keys
before and after in its pictures — passes through ``rename`` with the
queues its scene named (``Scene.queue``); the checks themselves judge the
real keys.
"""

from __future__ import annotations

from typing import TypeAlias

# (the queue as the grader names it, the tag the course writes for it)
Names: TypeAlias = tuple[tuple[str, str], ...]

QUEUE = "q"  # a check's queue, as the scripts' headers write it
PARENT_QUEUE = "pq"  # a cross-queue flow's parent queue (flow_deliver.lua's header)


def rename(text: str, names: Names) -> str:
    """``text`` with each run queue's hashtag written as the course writes it."""
    for real, course in names:
        text = text.replace("{" + real + "}", "{" + course + "}")
    return text
