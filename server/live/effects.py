"""What one keyspace notification did, in the course's words.

Valkey reports ``incrby`` on ``emq:{q}:job:P:dependencies``; ``describe`` names
the write by what the key is for and what was done: "one fewer outstanding child".
"""

from __future__ import annotations

import re

from server.emq.keyspace import STATE_SETS

# The key's role from the part after the hashtag: ":job:<id>[:part]" or a queue's suffix.
_JOB = re.compile(r"^:job:[^:]+(?P<part>:[a-z]+)?$")
_JOB_PARTS: dict[str, str] = {
    "": "row", ":dependencies": "counter", ":processed": "processed", ":ignored": "ignored", ":logs": "logs",
}
_QUEUE_KEYS: dict[str, str] = {
    ":pending": "pending", ":active": "active", ":schedule": "schedule", ":dead": "dead",
    ":flow:outbox": "outbox", ":flow:outbox:poison": "poison", ":flow:outbox:head": "head",
    ":metrics:completed": "metrics",
}

_WORDS: dict[tuple[str, str], str] = {
    ("counter", "set"): "set the count of outstanding children",
    ("counter", "incrby"): "one fewer outstanding child",
    ("counter", "decrby"): "one fewer outstanding child",
    ("counter", "del"): "the outstanding-child counter is gone",
    ("processed", "hset"): "recorded the child's result",
    ("processed", "del"): "the parent's results are gone",
    ("ignored", "hset"): "recorded the failed child's error (ignored dependency)",
    ("ignored", "del"): "the ignored failures are gone",
    ("logs", "del"): "deleted the finished job's logs",
    ("row", "hset"): "wrote fields of the job's row",
    ("row", "hincrby"): "counted one more attempt on the row",
    ("row", "hdel"): "removed fields from the job's row",
    ("row", "del"): "the job's row is retired",
    ("pending", "zadd"): "a job became claimable: it entered pending",
    ("pending", "zrem"): "a job left pending",
    ("pending", "zpopmin"): "a claim took the lowest-scored job out of pending",
    ("active", "zadd"): "a claim leased the job: it entered active",
    ("active", "zrem"): "the job left active (completed or failed)",
    ("schedule", "zadd"): "the failed job waits in schedule for its retry",
    ("schedule", "zrem"): "a job left schedule",
    ("dead", "zadd"): "a job died: it entered dead, the morgue",
    ("outbox", "rpush"): "a cross-queue note joined the outbox, for the Pump",
    ("outbox", "ltrim"): "the Pump trimmed the entries it delivered",
    ("outbox", "lpop"): "an entry left the head of the outbox",
    ("outbox", "del"): "the outbox is empty now",
    ("poison", "rpush"): "an entry that blocked the outbox was set aside",
    ("poison", "del"): "the poison list is empty now",
    ("head", "hset"): "the aged Pump noted a blocked head entry",
    ("head", "hincrby"): "the aged Pump counted one more blocked tick",
    ("head", "del"): "the aged Pump forgot the blocked head",
    ("metrics", "hincrby"): "one more completion counted",
    **{(state, "del"): f"{state} is empty now" for state in STATE_SETS},
}

# Any other key, by the command alone.
_VERBS: dict[str, str] = {
    "hset": "wrote hash fields", "hdel": "removed hash fields", "hincrby": "counted in a hash",
    "zadd": "added to a sorted set", "zrem": "removed from a sorted set",
    "zpopmin": "took the lowest-scored member of a sorted set", "set": "set a string",
    "incrby": "changed a counter", "decrby": "changed a counter", "del": "deleted the key",
    "rpush": "appended to a list", "lpush": "prepended to a list", "ltrim": "trimmed a list",
    "lpop": "took from the head of a list", "rename_to": "renamed here", "expire": "set an expiry",
    "expired": "expired",
}


def role(key: str) -> str | None:
    """What a queue key is for, from its suffix; ``None`` for other keys."""
    suffix = key[key.find("}") + 1 :]  # no brace: the whole key
    job = _JOB.match(suffix)
    if job is not None:
        return _JOB_PARTS.get(job.group("part") or "")
    return _QUEUE_KEYS.get(suffix)


def describe(event: str, key: str) -> str:
    """The words for one write: ``describe("incrby", "emq:{q}:job:P:dependencies")``."""
    return _WORDS.get((role(key) or "", event)) or _VERBS.get(event, event)


def command(event: str, key: str) -> str:
    """The command as the script wrote it where the notification names another: Valkey reports DECR as
    ``incrby``, and a counter's only write after its SET is release_parent.lua's DECR."""
    return "decr" if event == "incrby" and role(key) == "counter" else event
