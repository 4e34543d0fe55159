"""A learner's own answer, written into the starter, passes every check: the checks
judge what Valkey holds, not whether the text is the course's."""

from __future__ import annotations

import re

from server.exercises import GraderPool, catalogue, grade
from tests.integration.exercises.support import sandbox

FAN_IN_PART = """
  if left_active == 1 then
    redis.call('HSET', KEYS[4], job_id, ARGV[5])
    if redis.call('DECR', KEYS[3]) == 0 and redis.call('HGET', KEYS[5], 'state') == 'awaiting_children' then
      redis.call('ZADD', base .. 'pending', 0, ARGV[4])
      redis.call('HSET', KEYS[5], 'state', 'pending')
    end
  end
"""

DELIVER_PART = """
  local into = KEYS[2]
  if ARGV[5] ~= 'completed' then
    into = KEYS[4]
  end
  if redis.call('HSETNX', into, child_id, value) == 0 then
    return 2
  end
  local left = redis.call('DECR', KEYS[1])
  if left == 0 and redis.call('HGET', parent_row, 'state') == 'awaiting_children' then
    redis.call('ZADD', pending_key, 0, parent_id)
    redis.call('HSET', parent_row, 'state', 'pending')
  end
  return 1
"""


def answered(name: str, part: str) -> str:
    """The starter with its YOUR PART comment block (and a stub return) replaced by ``part``."""
    starter = catalogue.get(name).starter
    block = re.compile(r"  -- YOUR PART:.*?\n(?=end\n)", re.DOTALL)
    assert block.search(starter), name
    return block.sub(lambda _: part.lstrip("\n"), starter, count=1)


async def test_a_fan_in_written_into_the_starter_passes_every_check(pool: GraderPool) -> None:
    graded = await grade(pool, "fan-in", answered("fan-in", FAN_IN_PART), run_for=sandbox())
    assert graded.failed() == [], [check.said for check in graded.checks if not check.passed]


async def test_a_deliver_branch_written_into_the_starter_passes_every_check(pool: GraderPool) -> None:
    graded = await grade(pool, "deliver", answered("deliver", DELIVER_PART), run_for=sandbox())
    assert graded.failed() == [], [check.said for check in graded.checks if not check.passed]


async def test_the_redelivery_fixed_by_moving_the_decrement_under_the_guard_passes_every_check(
    pool: GraderPool,
) -> None:
    given = catalogue.get("redelivery").starter
    fixed = given.replace("""  if left_active == 1 then
    redis.call('HSET', KEYS[4], job_id, ARGV[5])
  end
  local remaining = redis.call('DECR', KEYS[3])
  if remaining <= 0""", """  local remaining = 1
  if left_active == 1 then
    redis.call('HSET', KEYS[4], job_id, ARGV[5])
    remaining = redis.call('DECR', KEYS[3])
  end
  if remaining <= 0""")
    assert fixed != given
    graded = await grade(pool, "redelivery", fixed, run_for=sandbox())
    assert graded.failed() == [], [check.said for check in graded.checks if not check.passed]
