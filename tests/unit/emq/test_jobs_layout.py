"""The KEYS and ARGV layouts jobs.complete and jobs.fail send for each arm, without Valkey."""

from __future__ import annotations

from server.emq import jobs

Q = "orders"


def test_complete_sends_the_seeds_layout_for_each_arm() -> None:
    flat = jobs.complete_call(Q, "JOBf", 1, jobs.Lineage(mode=""))
    assert flat == (["emq:{orders}:active", "emq:{orders}:job:JOBf"], ["JOBf", "1", "emq:{orders}:"])
    child = jobs.complete_call(Q, "JOBa", 2, jobs.Lineage(mode="sq", parent="JOBp", parent_queue=Q), "r")
    assert child == (
        [
            "emq:{orders}:active", "emq:{orders}:job:JOBa", "emq:{orders}:job:JOBp:dependencies",
            "emq:{orders}:job:JOBp:processed", "emq:{orders}:job:JOBp",
        ],
        ["JOBa", "2", "emq:{orders}:", "JOBp", "r"],
    )
    far = jobs.complete_call(Q, "JOBa", 2, jobs.Lineage(mode="xq", parent="JOBp", parent_queue="billing", policy="id"))
    assert far == (
        ["emq:{orders}:active", "emq:{orders}:job:JOBa", "emq:{orders}:flow:outbox"],
        ["JOBa", "2", "emq:{orders}:", "JOBp", "JOBa", "xq", "billing", "id"],
    )


def test_fail_sends_four_eight_or_five_keys_by_its_arm() -> None:
    def call(line: jobs.Lineage) -> tuple[list[str], list[str]]:
        return jobs.fail_call(Q, "JOBa", 1, line, "boom", 3, 1000)

    flat_keys, flat_args = call(jobs.Lineage(mode=""))
    assert len(flat_keys) == 4 and flat_args == ["JOBa", "1", "boom", "3", "1000", "emq:{orders}:"]
    same_keys, same_args = call(jobs.Lineage(mode="sq", parent="JOBp", parent_queue=Q, policy="id"))
    assert same_keys[4:] == [
        "emq:{orders}:job:JOBp", "emq:{orders}:job:JOBp:dependencies",
        "emq:{orders}:job:JOBp:ignored", "emq:{orders}:pending",
    ]
    assert same_args[6:] == ["JOBp", "id"]
    far_keys, far_args = call(jobs.Lineage(mode="xq", parent="JOBp", parent_queue="billing"))
    assert far_keys[4:] == ["emq:{orders}:flow:outbox"] and far_args[6:] == ["JOBp", "fp", "billing"]
