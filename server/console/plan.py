"""A console line -> a plan checked end to end (`Refusal` or `Malformed`) before anything is sent:
what `run.py` sends as the sandbox's ACL user, and nothing else."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import cache
from typing import Final, Literal

from server.console.allow import Refusal, Rule, rule_for
from server.console.confine import Confinement
from server.console.parse import Limits, split
from server.emq import registry
from server.emq.keyspace import ID_RE

_ARGV_RE: Final = re.compile(r"ARGV\[(\d+)\]")
_QUEUE_RE: Final = re.compile(r"(?<![-\w])queue(?![-'\w])")
NUMKEYS_RE: Final = re.compile(r"[0-9]{1,2}")
# ASCII digits only: `str.isdigit` passes '²', Lua's tonumber '1e9' and '0x10' (claim would pop
# the job before failing on the lease).
NUMBER_RE: Final = re.compile(r"[0-9]{1,15}")

# The Pump's own scripts move outbox entries, which the Pump trusts: never a learner's (issue 28).
PUMP_SIDE: Final = frozenset({"flow_deliver", "outbox_age_head", "outbox_trim"})
# ARGV each script reads as a whole number (tests check every tonumber(ARGV[n]) is here).
NUMBERS: Final[dict[str, frozenset[int]]] = {
    "claim": frozenset({2}), "complete": frozenset({2}), "fail": frozenset({2, 4, 5}),
    "enqueue_flow": frozenset({3}), "hold_parent": frozenset({3}), "requeue_lapsed": frozenset({2}),
    "EMQ.COMPLETE": frozenset({2}), "EMQ.FAIL": frozenset({2, 4, 5}),
}
# Where the EMQ module's commands take their base (after numkeys and keys).
NATIVE_ROLES: Final[dict[str, dict[int, str]]] = {"EMQ.COMPLETE": {3: "base"}, "EMQ.FAIL": {6: "base"}}


@dataclass
class Plan:
    command: str  # the line as typed
    how: Literal["direct", "script", "scan"]
    args: list[str]  # direct: the command to send, keys moved into the sandbox
    rule: Rule | None = None
    script: str | None = None
    keys: list[str] = field(default_factory=list)  # script: KEYS, moved into the sandbox
    argv: list[str] = field(default_factory=list)
    queue: str | None = None  # the one queue a write touches ("fanin", "outbox.orders")
    written: list[str] = field(default_factory=list)  # the keys a write names
    scan_type: str | None = None  # SCAN's TYPE

    @property
    def route(self) -> str | None:
        """The key whose slot a direct command goes to (None: any node); a script goes to its KEYS[1]'s."""
        assert self.rule is not None
        if self.rule.keys == "numkeys":
            return self.args[2]
        return self.args[1] if self.rule.keys != "none" else None


@cache
def script_names() -> frozenset[str]:
    """The course's scripts a learner may run (read once: the files ship with the code)."""
    return frozenset(registry.names()) - PUMP_SIDE


@cache
def script_shas() -> dict[str, str]:
    """SHA1 of each course script's text -> its name (what EVALSHA names)."""
    return {hashlib.sha1(registry.script_source(n).encode()).hexdigest(): n for n in registry.names()}


@cache
def argv_roles(name: str) -> dict[int, str]:
    """From the script's header: which ARGV is a queue base (emq:{q}:), which a queue."""
    roles: dict[int, str] = {}
    for line in registry.doc(name).argv:
        found = _ARGV_RE.match(line)
        if found is None:
            continue
        if "base" in line:
            roles[int(found[1])] = "base"
        elif "mode" not in line and _QUEUE_RE.search(line):  # not "mode: 'xq' cross-queue"
            roles[int(found[1])] = "queue"
    return roles


def plan(line: str, where: Confinement, limits: Limits) -> Plan:
    args = split(line, limits)
    script, rest = args[0].lower(), args[1:]  # a course script typed by name, or a command (EVALSHA among them)
    if script not in PUMP_SIDE and script not in script_names():
        rule = rule_for(args)
        if rule.name in ("SCAN", "KEYS"):
            return _scan_plan(line, rule, args, where)
        if rule.name != "EVALSHA":
            return _direct_plan(line, rule, args, where)
        named = script_shas().get(args[1].lower())
        if named is None:
            raise Refusal(403, "EVALSHA runs the course's scripts only: that SHA is not one of theirs "
                               f"({', '.join(sorted(script_names()))}).")
        script, rest = named, args[2:]
    if script in PUMP_SIDE:
        raise Refusal(403, f"{script} is the Pump's own script: it moves outbox entries, which the Pump trusts, "
                           "so the console does not run it.")
    roles = argv_roles(script)
    queue, real, confined = _call(script, rest, where, roles)
    # The job rows a script may make from its base and the ids in its ARGV, so a Reset finds them.
    bases = [confined[i - 1] for i, role in roles.items() if role == "base" and i <= len(confined)]
    skip = set(roles) | NUMBERS.get(script, frozenset())
    rows = [f"{bases[0]}job:{v}" for i, v in enumerate(confined, 1) if bases and i not in skip and ID_RE.fullmatch(v)]
    return Plan(line, "script", [], script=script, keys=real, argv=confined, queue=queue, written=real + rows)


def _direct_plan(line: str, rule: Rule, args: list[str], where: Confinement) -> Plan:
    sent = [rule.name, *args[1:]]
    found = Plan(line, "direct", sent, rule)
    write = rule.access == "write"
    if rule.keys == "numkeys":  # EMQ.COMPLETE / EMQ.FAIL: sent as typed, keys and base confined
        queue, real, argv = _call(rule.name, args[1:], where, NATIVE_ROLES[rule.name])
        sent[2:] = [*real, *argv]
        found.queue, found.written = queue, real
    elif rule.keys == "first":
        key = where.key(args[1], write=write, shape=rule.shape)
        sent[1] = key.real
        for value in args[2:]:
            where.check_value(value)
        if rule.name == "SET" and key.suffix.endswith(":dependencies") and not re.fullmatch(r"-?[0-9]{1,18}", args[2]):
            raise Refusal(400, ":dependencies is a counter: SET it to a whole number.")
        if rule.name in ("HSET", "HSETNX"):
            if len(args) % 2:
                raise Refusal(400, f"{rule.name} takes field value pairs after the key.")
            for i in range(2, len(args), 2):  # queue-naming fields confined
                if args[i] == "parent_queue":
                    sent[i + 1] = where.queue_value(args[i + 1])
        if write:
            found.queue, found.written = key.queue, [key.real]
    elif rule.keys == "all":
        named = [where.key(a, write=write, shape=rule.shape) for a in args[1:]]
        sent[1:] = [k.real for k in named]
        if write:
            queues = sorted({k.queue for k in named})
            if len(queues) > 1:
                raise Refusal(400, f"a write names keys of one queue; these name {', '.join(queues)}.")
            found.queue, found.written = queues[0], [k.real for k in named]
    else:
        for value in args[1:]:
            where.check_value(value)
    return found


def _call(name: str, rest: list[str], where: Confinement, roles: dict[int, str]) -> tuple[str, list[str], list[str]]:
    """(queue, KEYS, ARGV) of a script or EMQ.* call after its numkeys: one queue of the course's,
    numbers checked before it runs (a script failing halfway keeps what it wrote), bases confined."""
    if not rest or not NUMKEYS_RE.fullmatch(rest[0]) or int(rest[0]) > len(rest) - 1:
        raise Refusal(400, f"{name}: numkeys must be a whole number (digits 0-9), at most the number of "
                           "arguments after it.")
    n = int(rest[0])
    if n < 1:
        raise Refusal(400, f"{name}: name at least one key, so the console knows the queue it runs on.")
    keys = [where.key(k, write=False) for k in rest[1:1 + n]]
    queues = sorted({k.queue for k in keys})
    if len(queues) > 1:
        raise Refusal(403, f"every key one script touches shares one {{…}} hashtag; these name {', '.join(queues)}.")
    where.check_writable(queues[0], "", None)
    argv = rest[1 + n:]
    for i in sorted(NUMBERS.get(name, ())):
        if i <= len(argv) and not NUMBER_RE.fullmatch(argv[i - 1]):
            raise Refusal(400, f"{name}: ARGV[{i}] must be a whole number written with the digits 0-9; "
                               f"got {argv[i - 1][:40]!r}.")
    out = []  # a base (key names are made from it) is confined whatever its prefix; so is anything key-shaped
    for i, value in enumerate(argv, 1):
        role = roles.get(i)
        if role == "base" or value.startswith("emq:"):
            key = where.key(value, write=False, base=True)
            if key.queue != queues[0] or (role == "base" and key.suffix):
                raise Refusal(403, f"ARGV[{i}] must be the queue's base emq:{{{queues[0]}}}: (the KEYS name "
                                   f"{queues[0]}): one script, one hashtag.")
            out.append(key.real)
        elif role == "queue":
            out.append(where.queue_value(value))
        else:
            where.check_value(value)
            out.append(value)
    return queues[0], [k.real for k in keys], out


def _scan_plan(line: str, rule: Rule, args: list[str], where: Confinement) -> Plan:
    if rule.name == "KEYS":
        return Plan(line, "scan", [where.pattern(args[1])], rule)
    if args[1] != "0":
        raise Refusal(400, "the console walks the whole SCAN in one call: start it at cursor 0 (SCAN 0 MATCH …).")
    options: dict[str, str] = {}
    for i in range(2, len(args), 2):
        if args[i].upper() not in ("MATCH", "COUNT", "TYPE") or i + 1 >= len(args):
            raise Refusal(400, "SCAN 0 takes MATCH <pattern>, COUNT <n> and TYPE <type>.")
        options[args[i].upper()] = args[i + 1]
    return Plan(line, "scan", [where.pattern(options.get("MATCH", "*"))], rule, scan_type=options.get("TYPE"))
