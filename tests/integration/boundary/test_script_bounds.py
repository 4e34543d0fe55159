"""No learner input holds Valkey (issue 38): every script and EMQ.* command the
console reaches bounds its work by the KEYS and ARGV it was given, refuses in
words before its first write, never turns a key of the grammar into another
type, and another learner's line answers normally meanwhile.

The bound is counted, not timed: the commands Valkey ran for one hostile line
(INFO commandstats), against a budget that grows with the line's arguments.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.console import run
from server.console.as_user import Runner
from server.console.plan import script_names
from server.emq import includes, jobs, keyspace, registry

from .support import A, B, console, held_by, land_fanin, line, names

CALLS = sorted([*script_names(), "EMQ.COMPLETE", "EMQ.FAIL"])
SUFFIXES = ["pending", "active", "schedule", "dead", "flow:outbox", "flow:outbox:poison", "metrics:completed",
            "job:JOBparent", "job:JOBparent:dependencies", "job:JOBparent:processed", "job:JOBchild1",
            "job:JOBchild2", "job:JOBflat", "job:X", "job:JOBp", "job:JOBp:dependencies", "job:JOBp:ignored", "x"]
WORDS = ["999999999999999", "9999999999999999999", "4", "2", "1", "0", "-1", "1e9", "0x10", " 7", "X", "x",
         "JOBp", "JOBchild1", "JOBchild2", "JOBflat", "JOBparent", "emq:{fanin}:", "xq", "id", "fp", "", "fanin", "p"]
ATTACK = ("enqueue_flow 4 emq:{fanin}:job:JOBp emq:{fanin}:job:JOBp:dependencies emq:{fanin}:pending "
          "emq:{fanin}:job:X JOBp p 999999999999999 X x")
# What one line may cost Valkey: the console's own round trips (lock, admission and the
# budget's reads of its weights, the user's AUTH, a script load, the weighing after a
# write) and the script's calls, a few per argument. A stall costs millions.
FIXED_COMMANDS = 90
PER_ARGUMENT = 6
LOOP = "while true do end"
LIVENESS_S = 60.0  # a generous deadline: a stalled Valkey misses it by minutes, a slow machine never

Q = "emq:{fanin}:"
# A well-formed call of each: the hostile lines are these, mutated.
LAYOUTS: dict[str, list[tuple[list[str], list[str]]]] = {
    "claim": [(["pending", "active"], [Q, "30000"])],
    "requeue_lapsed": [(["active", "pending"], [Q, "100"])],
    "complete": [
        (["active", "job:JOBchild1"], ["JOBchild1", "1", Q]),
        (["active", "job:JOBchild1", "job:JOBparent:dependencies", "job:JOBparent:processed", "job:JOBparent"],
         ["JOBchild1", "1", Q, "JOBparent", "done"]),
        (["active", "job:JOBchild1", "flow:outbox"], ["JOBchild1", "1", Q, "JOBparent", "done", "xq", "fanin", "fp"]),
    ],
    "fail": [
        (["active", "job:JOBchild1", "schedule", "dead"], ["JOBchild1", "1", "boom", "1", "1000", Q]),
        (["active", "job:JOBchild1", "schedule", "dead", "job:JOBparent", "job:JOBparent:dependencies",
          "job:JOBparent:ignored", "pending"], ["JOBchild1", "1", "boom", "1", "1000", Q, "JOBparent", "id"]),
    ],
    "enqueue_flow": [(["job:JOBp", "job:JOBp:dependencies", "pending", "job:JOBa", "job:JOBb"],
                      ["JOBp", "p", "2", "JOBa", "a", "JOBb", "b"])],
    "enqueue_flow_child": [(["job:JOBc", "pending"], ["JOBc", "c", "JOBparent", ""])],
    "hold_parent": [(["job:JOBp", "job:JOBp:dependencies"], ["JOBp", "p", "3"])],
    "EMQ.COMPLETE": [(["active", "job:JOBflat"], ["JOBflat", "1", Q])],
    "EMQ.FAIL": [(["active", "job:JOBflat", "schedule", "dead"], ["JOBflat", "1", "boom", "3", "1000", Q])],
}
# every console-reachable call is attacked: a new script in server/emq/scripts needs its layout here
assert sorted(LAYOUTS) == CALLS, (
    f"LAYOUTS lacks {sorted(set(CALLS) - set(LAYOUTS))}, or names a call gone: {sorted(set(LAYOUTS) - set(CALLS))}")

keys = st.sampled_from(SUFFIXES)
words = st.one_of(st.sampled_from(WORDS), keys.map(lambda suffix: Q + suffix),
                  st.text(alphabet="JOBxq0123456789:-", max_size=12))


@st.composite
def hostile(draw: st.DrawFn) -> str:
    """A call of the course's, its keys, arguments and count mutated a few times over."""
    call = draw(st.sampled_from(CALLS))
    named, argv = (list(part) for part in draw(st.sampled_from(LAYOUTS[call])))
    for _ in range(draw(st.integers(0, 4))):
        where, at = draw(st.sampled_from([named, argv])), draw(st.integers(0, 12))
        how = draw(st.sampled_from(["replace", "insert", "drop"]))
        word = draw(keys) if where is named else draw(words)
        if how == "drop" and where:
            del where[at % len(where)]
        elif how == "insert" or not where:
            where.insert(at, word)
        else:
            where[at % len(where)] = word
    numkeys = draw(st.sampled_from([len(named), len(named), max(len(named) - 1, 1), len(named) + 1]))
    return " ".join([call, str(numkeys), *(Q + k for k in named), *(f'"{a}"' for a in argv)])


async def commands_run(conn: Any) -> int:
    """Every command Valkey has run so far, those inside scripts too."""
    stats = await conn.info("commandstats")
    return sum(int(v["calls"]) for v in stats.values())


async def emq_keys(conn: Any, sandbox: str) -> dict[str, tuple[bytes, int]]:
    """The sandbox's emq: keys, byte for byte (the console's budget keys are the site's, left out)."""
    return {k: v for k, v in (await held_by(conn, sandbox)).items() if k.startswith("emq:")}


async def misfits(conn: Any, sandbox: str) -> list[str]:
    """Keys of the sandbox whose type is not the one the key grammar gives their name."""
    wrong = []
    for key in await names(conn, f"emq:{{{sandbox}.*"):
        suffix = key.split("}:", 1)[1]
        want, held = keyspace.grammar_type(suffix), await conn.type(key)
        if want is not None and held != want:
            wrong.append(f"{key} is a {held}, the grammar says {want}")
    return wrong


async def fresh(conn: Any) -> None:
    """B's fan-in landed again with one child claimed (active not empty); A's untouched."""
    for key in await names(conn, f"emq:{{{B}.*"):
        await conn.delete(key)
    await land_fanin(conn, B)
    await jobs.claim(conn, f"{B}.fanin", 30_000)
    # a flat job claimed beside the flow: what EMQ.COMPLETE and EMQ.FAIL act on
    await conn.hset(keyspace.job_key(f"{B}.fanin", "JOBflat"), mapping={"state": "active", "attempts": "1"})
    await conn.zadd(keyspace.queue_key(f"{B}.fanin", "active"), {"JOBflat": 1})
    if not await conn.exists(f"emq:{{{A}.fanin}}:pending"):
        await land_fanin(conn, A)


@settings(max_examples=200, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=hostile())
async def test_every_console_script_bounds_its_work_by_its_arguments_and_the_other_learner_answers_normally(
    admin: Any, runner: Runner, text: str
) -> None:
    await fresh(admin)
    before, counted = await emq_keys(admin, B), await commands_run(admin)
    mine = line(console(admin, runner, B), text)
    theirs = line(console(admin, runner, A), "GET emq:{fanin}:job:JOBparent:dependencies")
    answer, other = await asyncio.wait_for(asyncio.gather(mine, theirs), LIVENESS_S)
    spent = await commands_run(admin) - counted
    assert spent <= FIXED_COMMANDS + PER_ARGUMENT * len(text.split()) + 10, (text, spent)
    assert answer.status in (200, 400, 403, 409), (text, answer)
    assert (other.status, other.lines) == (200, ('"3"',)), other
    assert await misfits(admin, B) == [], text
    if answer.kind != "reply":  # refused, or an error reply: nothing of it was written
        assert await emq_keys(admin, B) == before, (text, answer.lines)


async def test_the_reported_enqueue_flow_line_is_refused_in_words_at_once_and_writes_nothing(
    admin: Any, runner: Runner
) -> None:
    await fresh(admin)
    before, counted = await emq_keys(admin, B), await commands_run(admin)
    answer = await asyncio.wait_for(line(console(admin, runner, B), ATTACK), LIVENESS_S)
    assert await commands_run(admin) - counted < FIXED_COMMANDS
    assert answer.kind == "error"
    assert answer.lines[0].startswith("(error) EMQARGS enqueue_flow: ARGV[3] says 999999999999999, so it "
                                      "takes"), answer
    assert await emq_keys(admin, B) == before


async def test_a_non_job_child_is_still_refused_with_the_kind_law_before_any_write(
    admin: Any, runner: Runner
) -> None:
    await fresh(admin)
    before = await emq_keys(admin, B)
    answer = await line(console(admin, runner, B), ATTACK.replace("999999999999999", "1"))
    assert answer.lines == ("(error) EMQKIND job id must be JOB-namespaced",), answer
    assert await emq_keys(admin, B) == before


async def test_scripts_and_emq_fail_onto_keys_of_another_type_are_refused_and_no_type_changes(
    admin: Any, runner: Runner
) -> None:
    await fresh(admin)
    before = await emq_keys(admin, B)
    onto_pending = "hold_parent 2 emq:{fanin}:job:JOBx emq:{fanin}:pending JOBx p 3"
    onto_outbox = "hold_parent 2 emq:{fanin}:flow:outbox emq:{fanin}:job:JOBx:dependencies JOBx p 3"
    onto_absent_set = "hold_parent 2 emq:{fanin}:job:JOBx emq:{fanin}:schedule JOBx p 3"
    rows_onto_pending = ("enqueue_flow 4 emq:{fanin}:job:JOBp emq:{fanin}:job:JOBp:dependencies emq:{fanin}:pending "
                         "emq:{fanin}:active JOBp p 1 JOBa a")
    for text in (onto_pending, onto_outbox, onto_absent_set, rows_onto_pending):
        answer = await line(console(admin, runner, B), text)
        assert answer.kind == "error" and answer.lines[0].startswith("(error) EMQTYPE "), answer
    native = ("EMQ.FAIL 4 emq:{fanin}:active emq:{fanin}:job:JOBflat emq:{fanin}:metrics:completed "
              "emq:{fanin}:dead JOBflat 1 boom 3 1000 emq:{fanin}:")
    answer = await line(console(admin, runner, B), native)
    assert answer.lines == ("(error) ERR EMQ.FAIL adds to the queue's own sets: schedule and dead must be "
                            "<base>schedule and <base>dead",), answer
    assert await emq_keys(admin, B) == before
    assert await misfits(admin, B) == []


async def test_claim_refuses_a_row_whose_attempts_a_console_line_broke_and_writes_nothing(
    admin: Any, runner: Runner
) -> None:
    await fresh(admin)
    typed = console(admin, runner, B)
    assert (await line(typed, "HSET emq:{fanin}:job:JOBchild2 attempts abc")).status == 200
    before = await emq_keys(admin, B)
    answer = await line(typed, "claim 2 emq:{fanin}:pending emq:{fanin}:active emq:{fanin}: 30000")
    assert answer.lines[0].startswith("(error) EMQDATA claim: the job row's attempts is not a whole number"), answer
    assert await emq_keys(admin, B) == before


async def test_complete_refuses_a_broken_completed_count_before_it_counts_the_child(
    admin: Any, runner: Runner
) -> None:
    await fresh(admin)
    typed = console(admin, runner, B)
    assert (await line(typed, "HSET emq:{fanin}:metrics:completed count many")).status == 200
    before = await emq_keys(admin, B)
    answer = await line(typed, "complete 5 emq:{fanin}:active emq:{fanin}:job:JOBchild1 "
                               "emq:{fanin}:job:JOBparent:dependencies emq:{fanin}:job:JOBparent:processed "
                               "emq:{fanin}:job:JOBparent JOBchild1 1 emq:{fanin}: JOBparent done")
    assert answer.lines[0].startswith("(error) EMQDATA complete: the completed count"), answer
    assert await emq_keys(admin, B) == before


async def test_a_console_script_past_its_budget_is_stopped_with_script_kill_and_the_learner_is_told(
    admin: Any, runner: Runner, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The watchdog behind the bounds: were a course script to loop (here `claim`'s
    text swapped for a loop, since none of theirs does), SCRIPT KILL ends it."""
    await fresh(admin)
    course = registry.script_source
    monkeypatch.setattr(registry, "script_source", lambda name: LOOP if name == "claim" else course(name))
    stuck = asyncio.ensure_future(line(console(admin, runner, B), f"claim 2 {Q}pending {Q}active {Q} 30000"))
    other = await asyncio.wait_for(line(console(admin, runner, A), "GET emq:{fanin}:job:JOBparent:dependencies"),
                                   LIVENESS_S)
    answer = await asyncio.wait_for(stuck, LIVENESS_S)
    assert answer.status == 422 and answer.refused is not None and answer.refused.reason == "stopped"
    assert answer.refused.message.startswith(f"claim ran past the console's {run.SCRIPT_MS} ms budget, so "
                                             "the site stopped it with SCRIPT KILL before it wrote anything")
    # the other learner was answered meanwhile: the value, or in words that Valkey was busy
    assert other.status == 200 or (other.status == 503 and "busy" in (other.refused.message if other.refused
                                                                      else "")), other
    assert await admin.ping()


async def test_the_scripts_read_the_key_grammar_as_the_host_does(admin: Any) -> None:
    """Lua's patterns and Python's regexes read the one table alike, on Valkey itself."""
    suffixes = [*SUFFIXES, "job:", "job:a:b", "pendings", "flow:outbox:x", "metrics:completed:x", "job:{x}"]
    source = includes.expand("probe.lua", "-- @include key_grammar\nlocal found = {}\n"
                             "for i, key in ipairs(KEYS) do found[i] = grammar_type(key) or '-' end\n"
                             "return found\n", registry.SCRIPTS_DIR)
    said = await admin.eval(source, len(suffixes), *(Q + suffix for suffix in suffixes))
    assert said == [keyspace.grammar_type(suffix) or "-" for suffix in suffixes]
