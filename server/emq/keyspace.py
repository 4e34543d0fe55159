"""The key grammar ``emq:{<queue>}:<suffix>`` and the host-side id gate.

Every key goes through here, so an ill-formed id or queue raises ``BadId`` before any wire.
The queue inside ``{...}`` is the hashtag: one queue's keys share one slot.
"""

from __future__ import annotations

import functools
import re
from pathlib import Path
from typing import Final

from redis.crc import key_slot

# 1..128 characters of A-Z a-z 0-9 _ . -  (no braces, colons, globs, spaces).
ID_RE: Final = re.compile(r"[A-Za-z0-9_.\-]{1,128}")


class BadId(ValueError):
    """An id or queue name that is not well-formed; raised before any write."""


@functools.lru_cache(maxsize=8192)
def _matches(value: str) -> bool:
    # fullmatch ("$" would accept a trailing newline); cached: a click repeats ids ~90 times
    return ID_RE.fullmatch(value) is not None


def _checked(value: object, what: str) -> str:
    if not isinstance(value, str) or not _matches(value):
        raise BadId(f"ill-formed {what} {value!r}: want 1-128 chars of [A-Za-z0-9_.-]")
    return value


def check_id(job_id: object) -> str:
    return _checked(job_id, "job id")


def check_queue(queue: object) -> str:
    return _checked(queue, "queue name")


def base(queue: str) -> str:
    """The queue's key prefix ``emq:{q}:``; scripts append suffixes to it."""
    return _base(queue) if isinstance(queue, str) else _base(check_queue(queue))


def queue_key(queue: str, suffix: str) -> str:
    """``emq:{q}:<suffix>``, e.g. ``pending``; an empty suffix gives the base."""
    return base(queue) + suffix


def job_key(queue: str, job_id: str) -> str:
    """The job row ``emq:{q}:job:<id>``; gates both the queue and the id."""
    if isinstance(queue, str) and isinstance(job_id, str):
        return _job_key(queue, job_id)
    return base(queue) + "job:" + check_id(job_id)


# Cached (a raise never is): a click builds ~60 key names on a few queues and ids.
@functools.lru_cache(maxsize=8192)
def _base(queue: str) -> str:
    return "emq:{" + check_queue(queue) + "}:"  # the queue's hashtag: every key of the queue carries it


@functools.lru_cache(maxsize=16384)
def _job_key(queue: str, job_id: str) -> str:
    return _base(queue) + "job:" + check_id(job_id)


def dependencies_key(queue: str, job_id: str) -> str:
    """A held parent's outstanding-child counter."""
    return job_key(queue, job_id) + ":dependencies"


def processed_key(queue: str, job_id: str) -> str:
    """A parent's child id -> result hash, written by the fan-in."""
    return job_key(queue, job_id) + ":processed"


def ignored_key(queue: str, job_id: str) -> str:
    """A parent's child id -> error hash, for children ignored on failure."""
    return job_key(queue, job_id) + ":ignored"


def logs_key(queue: str, job_id: str) -> str:
    """A job's log list; removed (best effort) once the job completes."""
    return job_key(queue, job_id) + ":logs"


def outbox_key(queue: str) -> str:
    """Cross-queue completions emitted on this queue's slot, for the Pump."""
    return queue_key(queue, "flow:outbox")


def poison_key(queue: str) -> str:
    """Where the aged Pump sets aside an outbox head that never delivers."""
    return queue_key(queue, "flow:outbox:poison")


def outbox_head_key(queue: str) -> str:
    """Hash counting how many aged ticks found the same blocked head."""
    return queue_key(queue, "flow:outbox:head")


def metrics_key(queue: str) -> str:
    """The queue's completion metric hash (field ``count``)."""
    return queue_key(queue, "metrics:completed")


STATE_SETS: Final = ("pending", "active", "schedule", "dead")
# The key grammar's types by suffix, read from the scripts' own table
# (scripts/includes/key_grammar.lua; patterns that read alike in Lua and Python),
# so the host and the scripts refuse the same keys.
_GRAMMAR_FILE: Final = Path(__file__).resolve().parent / "scripts" / "includes" / "key_grammar.lua"
_ROW_RE: Final = re.compile(r"^\s*\{'([a-z:\[\]^+]+)', '([a-z]+)'\},?\s*$", re.M)
GRAMMAR: Final = tuple((re.compile(pattern), kind) for pattern, kind in _ROW_RE.findall(_GRAMMAR_FILE.read_text()))


def grammar_type(suffix: str) -> str | None:
    return next((kind for pattern, kind in GRAMMAR if pattern.fullmatch(suffix)), None)


def hash_slot(key: str | bytes) -> int:
    """The cluster slot of ``key`` (only the text inside a non-empty ``{tag}`` is hashed)."""
    return key_slot(key.encode("utf-8") if isinstance(key, str) else key)


def queue_slot(queue: str) -> int:
    """The slot every key of ``queue`` lives on (what the web UI shows)."""
    return hash_slot(base(queue))
