"""The console's rules that hold without Valkey: numbers, the Pump's scripts,
bases confined whatever their prefix, values that name another sandbox, one
queue per write, what a write costs, and the ACL user's rules kept in step
with what the console and the course's scripts run."""

from __future__ import annotations

import re

import pytest
from redis.exceptions import ResponseError

from server.console import as_user as acl
from server.console import budget, run
from server.console.allow import RULES, Refusal
from server.console.api import ConsoleReply
from server.console.confine import Confinement
from server.console.parse import Limits
from server.console.plan import NUMBERS, PUMP_SIDE, plan, script_names, script_shas
from server.emq import registry
from server.valkey import reply

SANDBOX = "s0a1b2c3d4e"
WHERE = Confinement(SANDBOX, frozenset({"fanin", "native", "outbox.orders", "outbox.mail"}))
CLAIM = "claim 2 emq:{fanin}:pending emq:{fanin}:active emq:{fanin}: "


@pytest.mark.parametrize("lease", ["nan", "inf", "-inf", "1e3", "0x10", "²", "٣٠", "3.5", "", "1 "])
def test_a_number_a_script_computes_with_is_ascii_digits_only(lease: str) -> None:
    with pytest.raises(Refusal, match=r"ARGV\[2\] must be a whole number") as caught:
        plan(CLAIM + f"'{lease}'", WHERE, Limits())
    assert caught.value.status == 400 and caught.value.reason == "bad-line"
    assert plan(CLAIM + "30000", WHERE, Limits()).argv[1] == "30000"


@pytest.mark.parametrize("numkeys", ["²", "٢", "-1", "2.0", "nan", "999"])
def test_numkeys_is_ascii_digits_too(numkeys: str) -> None:
    with pytest.raises(Refusal, match="numkeys must be a whole number") as caught:
        plan(f"claim {numkeys} emq:{{fanin}}:pending emq:{{fanin}}:active emq:{{fanin}}: 1", WHERE, Limits())
    assert caught.value.status == 400


def test_every_number_a_runnable_script_reads_is_checked() -> None:
    for name in script_names():
        read = {int(n) for n in re.findall(r"tonumber\(ARGV\[(\d+)\]\)", registry.script_source(name))}
        assert read <= NUMBERS.get(name, frozenset()), f"{name}: add ARGV {sorted(read)} to console/plan.py NUMBERS"


@pytest.mark.parametrize("name", sorted(PUMP_SIDE))
def test_the_pumps_scripts_are_not_run_by_name_or_by_sha(name: str) -> None:
    sha = next(s for s, n in script_shas().items() if n == name)
    for text in (f"{name} 1 emq:{{fanin}}:x a", f"EVALSHA {sha} 1 emq:{{fanin}}:x a"):
        with pytest.raises(Refusal, match="the Pump's own script"):
            plan(text, WHERE, Limits())


@pytest.mark.parametrize("base", ["LLL{s0a1b2c3d4e.native}:", "{native}:", "native", "emq:{native}:x:",
                                  "emq:{fanin}:", "emq:{szzzzzzzzzz.native}:"])
def test_the_native_commands_base_is_confined_whatever_its_prefix(base: str) -> None:
    with pytest.raises(Refusal):
        plan(f"EMQ.COMPLETE 2 emq:{{native}}:active emq:{{native}}:job:JOBx JOBx 1 {base}", WHERE, Limits())
    sent = plan("EMQ.COMPLETE 2 emq:{native}:active emq:{native}:job:JOBx JOBx 1 emq:{native}:", WHERE, Limits())
    assert sent.args[-1] == f"emq:{{{SANDBOX}.native}}:" and sent.queue == "native"


def test_a_value_naming_another_sandbox_through_a_json_escape_is_refused() -> None:
    for value in ['{"parent_queue":"\\u0073zzzzzzzzzz.fanin"}', "\\u0073zzzzzzzzzz.fanin", "szzzzzzzzzz.fanin"]:
        with pytest.raises(Refusal, match="another sandbox"):
            plan(f"RPUSH emq:{{fanin}}:junk '{value}'", WHERE, Limits())
    plan(f"RPUSH emq:{{fanin}}:junk '{{\"q\":\"\\u0073{SANDBOX[1:]}.fanin\"}}'", WHERE, Limits())  # its own


def test_a_write_names_one_queue_and_a_read_none() -> None:
    with pytest.raises(Refusal, match="keys of one queue"):
        plan("DEL emq:{fanin}:a emq:{native}:b", WHERE, Limits())
    assert plan("DEL emq:{fanin}:a emq:{fanin}:b", WHERE, Limits()).queue == "fanin"
    assert plan("EXISTS emq:{fanin}:a emq:{native}:b", WHERE, Limits()).queue is None


def test_a_write_costs_its_arguments_and_an_overhead() -> None:
    found = plan("HSET emq:{fanin}:job:JOBx state pending", WHERE, Limits())
    assert budget.cost(found) == budget.OVERHEAD + len(f"emq:{{{SANDBOX}.fanin}}:job:JOBx") + len("statepending")
    assert budget.extra_names(found, SANDBOX) == [f"emq:{{{SANDBOX}.fanin}}:job:JOBx"]
    assert budget.extra_names(plan("ZADD emq:{fanin}:pending 1 JOBx", WHERE, Limits()), SANDBOX) == []
    assert budget.extra_names(plan(CLAIM + "1", WHERE, Limits()), SANDBOX) == []


def test_the_sandbox_user_runs_what_the_console_and_the_scripts_send_and_nothing_denied() -> None:
    allowed = set(acl.COMMANDS) | set(acl.MODULE_COMMANDS)
    assert not allowed & set(acl.DENIED)
    host_side = {"SCAN", "KEYS"}  # run as the site, MATCH the sandbox's keys
    assert {name.lower() for name in RULES if name not in host_side} <= allowed
    for name in script_names():
        called = re.findall(r"redis\.p?call\('(\w+)'", registry.script_source(name))
        assert {c.lower() for c in called} <= allowed, name


def test_the_sandbox_users_rules_reach_its_own_keys_and_no_channel() -> None:
    rules = acl.sandbox_rules(SANDBOX, b"secret")
    assert rules[:2] == ["reset", "on"] and rules[2].startswith("#") and len(rules[2]) == 65
    assert [r for r in rules if r.startswith(("~", "%", "&", "allkeys", "allchannels"))] == [f"~emq:{{{SANDBOX}.*"]
    assert "resetchannels" in rules and rules.index("-@all") < min(i for i, r in enumerate(rules) if r[0] == "+")
    assert not [r for r in rules if r.startswith("+@")]
    assert {f"+{c}" for c in acl.MODULE_COMMANDS} <= set(rules)
    plain = acl.sandbox_rules(SANDBOX, b"secret", module=False)  # a Valkey without the EMQ module
    assert not {f"+{c}" for c in acl.MODULE_COMMANDS} & set(plain) and set(plain) < set(rules)
    idle = acl.idle_rules(b"secret")
    assert not [r for r in idle if r.startswith(("~", "&", "+@"))] and "-@all" in idle


def test_error_replies_print_with_the_code_valkey_sent() -> None:
    assert reply.error_text(ResponseError("ACL failure in script: No permissions", status_code="ERR")) == (
        "ERR ACL failure in script: No permissions")
    noperm = ResponseError("No permissions to access a key", status_code="NOPERM")
    assert run.printed(plan("PING", WHERE, Limits()), noperm) == [
        "(error) NOPERM No permissions to access a key", run.NOPERM_WORDS]


def test_a_reply_says_its_status_and_the_json_the_page_reads() -> None:
    ok = ConsoleReply("PING", ("PONG",), "reply")
    assert ok.status == 200 and ok.body() == {"command": "PING", "reply_lines": ["PONG"], "kind": "reply"}
    no = ConsoleReply("x", ("(refused) too much",), "refused", refused=Refusal(409, "too much", "over-budget"))
    assert no.status == 409 and no.body()["error"] == "too much"
