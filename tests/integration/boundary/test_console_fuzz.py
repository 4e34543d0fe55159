"""A property-based fuzz of `run_line` from a second sandbox: whatever line a
hostile visitor types, the console answers (a reply or a typed refusal, never
an exception), and no key of the first sandbox changes (DUMP of every key)."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.console.allow import REASONS, RULES
from server.console.as_user import Runner
from server.emq import registry

from .support import A, B, console, held_by, land_fanin, line

NAMES = [*RULES, *REASONS, *registry.names(), "eval", "Get", "EMQ.COMPLETE", "", "\x00", "ñ", "AUTH", "SELECT"]
QUEUES = ["fanin", "native", "outbox.orders", "outbox.mail", "mine", "*", "", "a}b", "{x", f"{A}.fanin",
          "s0000000000.fanin", f"\\u0073{A[1:]}.fanin", "fanin}:job:{x"]
SUFFIXES = ["pending", "active", "dead", "job:JOBparent", "job:JOBparent:dependencies", "job:JOBchild1",
            "flow:outbox", "flow:outbox:poison", "metrics:completed", "x", "*", "", " "]
WORDS = ["0", "1", "²", "nan", "-1", "30000", "emq:{fanin}:", f"emq:{{{A}.fanin}}:", f"LLL{{{B}.native}}:",
         "parent_queue", f"{A}.fanin", "xq", "fp", "JOBchild1", "JOBparent", "lab:secret", "*", "WITHSCORES"]

keys = st.builds(lambda q, s: "emq:{" + q + "}:" + s, st.sampled_from(QUEUES), st.sampled_from(SUFFIXES))
words = st.one_of(keys, st.sampled_from(WORDS), st.text(max_size=10))


def quoted(word: str) -> str:
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'


lines = st.one_of(
    st.builds(lambda name, args: " ".join([name, *(quoted(a) for a in args)]),
              st.sampled_from(NAMES), st.lists(words, max_size=10)),
    st.builds(lambda name, n, args: " ".join([name, str(n), *(quoted(a) for a in args)]),
              st.sampled_from([*registry.names(), "EMQ.COMPLETE", "EMQ.FAIL"]), st.integers(0, 6),
              st.lists(words, max_size=12)),
    st.text(max_size=120),
)


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(text=lines)
async def test_hostile_lines_get_an_answer_and_leave_the_other_sandbox_as_it_was(
    admin: Any, runner: Runner, text: str
) -> None:
    if not await admin.exists(f"emq:{{{A}.fanin}}:pending"):
        await land_fanin(admin, A)
    before = await held_by(admin, A)
    answer = await line(console(admin, runner, B), text)
    assert answer.status in (200, 400, 403, 409), (text, answer)
    assert await held_by(admin, A) == before, text
