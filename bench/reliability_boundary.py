"""Issue 28, items 4 and 8, as an attacker tries them on `emqlab serve`:
a crafted outbox entry from a second sandbox aimed at the first, and
EMQ.COMPLETE with a base outside the key grammar. The victim's keys are
compared byte for byte (DUMP) before and after; no key may appear."""

from __future__ import annotations

import json
from typing import Any

import redis

from bench.reliability_drive import Mode, Row, act, console, counted, dumps, instructor, said, sandbox_of, visitor
from bench.reliability_procs import Serve, scratch
from server.valkey import acl, datadir

PARENT = "JOBparent"  # the outbox widget's parent, on the victim's outbox.orders


def crafted(victim: str, attacker: str, kind: str = "completed") -> str:
    """A completion aimed at the victim's parent; `\\u0073` (an "s") hides the victim's id from a raw-text check."""
    entry = json.dumps({"kind": kind, "child": "JOBmail1", "child_queue": f"{attacker}.outbox.mail",
                        "value": "pwned", "parent": PARENT, "parent_queue": "@" + victim[1:] + ".outbox.orders",
                        "policy": "fp"})
    return entry.replace("@", "\\u0073")


def attack_lines(victim: str, attacker: str) -> list[str]:
    """Every console line that could put the entry where a Pump reads it, or reach the victim another way."""
    entry, hidden = crafted(victim, attacker), "\\u0073" + victim[1:]
    outbox = "emq:{outbox.mail}:flow:outbox"
    return [
        f"RPUSH emq:{{outbox.mail}}:junk '{entry}'",
        f"RPUSH {outbox} '{entry}'",
        f"LPUSH {outbox}:poison '{entry}'",
        f"outbox_age_head 3 emq:{{outbox.mail}}:junk {outbox}:head {outbox} '{entry}' 0",
        f"flow_deliver 1 {outbox} '{entry}'",
        f"outbox_trim 1 {outbox} x",
        f"HSET emq:{{outbox.mail}}:job:JOBevil parent {PARENT} parent_queue '{hidden}.outbox.orders'",
        f"complete 3 emq:{{outbox.mail}}:active emq:{{outbox.mail}}:job:JOBmail1 {outbox} JOBmail1 1"
        f" emq:{{outbox.mail}}: {PARENT} pwned xq '{hidden}.outbox.orders' fp",
        f"DECR emq:{{{victim}.outbox.orders}}:job:{PARENT}:dependencies",
        f"SADD emq:{{{victim}.outbox.orders}}:job:{PARENT}:processed pwned",
    ]


def land_on(learner: Any, widgets: tuple[str, ...]) -> Any:
    """The learner's widgets landed (a first state read lands a widget's scenario)."""
    for widget in widgets:
        learner.get(f"/api/widgets/{widget}/state")
    return learner


def demo_class(url: str) -> tuple[Any, Any, str]:
    """The instructor's own sandbox shown to a class in demo mode, mid-story; a learner who joined it.
    (the instructor, the learner, the class's code)"""
    teacher, _ = instructor(url)
    for widget in ("outbox", "fanin"):
        teacher.get(f"/api/widgets/{widget}/state")
    act(teacher, "complete-child", "outbox")  # an entry of the victim's own waits in its outbox
    code = teacher.post("/instructor/rooms", json={"name": "Demo"}).json()["room"]["code"]
    teacher.post(f"/instructor/rooms/{code}/mode", json={"mode": "demo"})
    member = visitor(url)
    member.post("/room/join", json={"code": code, "name": "Mallory"}, headers={"Accept": "application/json"})
    return teacher, member, code


def crafted_entry(mode: Mode) -> list[Row]:
    work = scratch("crafted")
    with Serve(work) as site:
        r = site.redis()
        teacher, attacker_page, _code = demo_class(site.url)
        victim, attacker = sandbox_of(teacher), sandbox_of(attacker_page)
        reading = attacker_page.get("/api/widgets/outbox/state")
        watched = reading.text
        in_demo = console(attacker_page, "SET emq:{fanin}:note hello")
        left = attacker_page.post("/room/leave", headers={"Accept": "application/json"}).status_code
        land_on(attacker_page, ("outbox", "fanin"))
        before = dumps(r, victim)
        was = int(r.get(f"emq:{{{victim}.outbox.orders}}:job:{PARENT}:dependencies") or 0)
        answers = [console(attacker_page, line) for line in attack_lines(victim, attacker)]
        wrote = sum(bool(a.json().get("kind") == "reply") for a in answers)
        ticks = [act(attacker_page, slug, "outbox") for slug in ("pump-tick", "crash-before-trim", "pump-tick",
                                                                 *["aged-pump-tick"] * 3)]
        after_console = dumps(r, victim)
        # Below the console: the entries written straight into the attacker's outbox, as a console
        # that let them through would have; only the Pump's own check stands between them and the victim.
        r.rpush(f"emq:{{{attacker}.outbox.mail}}:flow:outbox",
                *[crafted(victim, attacker, kind) for kind in ("completed", "completed", "completed", "failed")])
        shown = attacker_page.get("/api/widgets/outbox/state")
        lane = shown.json()["snapshot"]["picture"]["queues"][0]
        planted = [act(attacker_page, slug, "outbox") for slug in ("pump-tick", *["aged-pump-tick"] * 9)]
        aside = r.llen(f"emq:{{{attacker}.outbox.mail}}:flow:outbox:poison")
        after = dumps(r, victim)
        counter = int(r.get(f"emq:{{{victim}.outbox.orders}}:job:{PARENT}:dependencies") or 0)
    refusals = {said(a, 90) for a in answers if a.status_code != 200}
    return [
        Row("the instructor's own sandbox, mid-story (an outbox entry waits), shown to a class in demo mode; "
            "a learner joins and reads it", str(reading.status_code), None, len(watched),
            f"the demo's sandbox id appears {watched.count(victim)} times in what the learner reads "
            "(in values: a row's parent_queue, the picture's queue)", None),
        Row("the learner's console write (`SET emq:{fanin}:note hello`) while watching the demo",
            str(in_demo.status_code), None, None,
            said(in_demo, 120), in_demo.status_code == 403),
        Row(f"the learner leaves the class (its own sandbox again) and sends {len(answers)} console lines: the "
            "crafted entry (\\u0073 escape) by RPUSH, LPUSH, the Pump's scripts, a job row and `complete` naming "
            "the demo's queue, the demo's keys by name", counted([left, *(a.status_code for a in answers)]), None,
            None, f"{wrote} ran; said: " + " | ".join(sorted(refusals))[:420], wrote == 0),
        Row("the learner's Pump ticks: tick, crash before trim, tick, aged tick ×3",
            counted(t.status_code for t in ticks), None, None, said(ticks[0], 120),
            all(t.status_code < 500 for t in ticks) and after_console == before),
        Row("four crafted entries written into the learner's outbox below the console (3 completed, 1 failed); "
            "the learner's page, then a tick and aged ticks ×9",
            counted([shown.status_code, *(p.status_code for p in planted)]), None, None,
            f"the page: {lane['outbox'][0]['text'] if lane['outbox'] else 'no entry shown'}; the tick: "
            f"{said(planted[0], 110)}; set aside on the poison list: {aside}",
            aside == 4 and all(p.status_code < 500 for p in planted)),
        Row("every key of the demo's sandbox, DUMPed before the first line and after the last tick", "—", None,
            sum(map(len, after.values())),
            f"byte-identical: {after == before} ({len(after)} keys); its :dependencies {was} → {counter}",
            after == before and counter == was),
    ]


def outside_grammar(mode: Mode) -> list[Row]:
    work = scratch("grammar")
    with Serve(work) as site:
        r = site.redis()
        other, learner = land_on(visitor(site.url), ("native",)), land_on(visitor(site.url), ("native",))
        mine, theirs = sandbox_of(learner), sandbox_of(other)
        bases = [f"LLL{{{mine}.native}}:", f"emq:{{{theirs}.native}}:", "emq:{native}:metrics:", f"LLL{mine}:"]
        lines = mode.pick(20, 80)
        console(learner, "HGETALL emq:{native}:job:X")  # a line that runs: the sandbox's Valkey user is made
        everything = {k for k in r.scan_iter(count=1000) if not str(k).startswith("lab:")}
        answers = [console(learner, "EMQ.COMPLETE 2 emq:{native}:active emq:{native}:job:X X 1 "
                            + bases[n % len(bases)]) for n in range(lines)]
        made = sorted({k for k in r.scan_iter(count=1000) if not str(k).startswith("lab:")} - everything)
        # The same below the console's checks, as the sandbox's own Valkey user (the site's
        # secret gives its password): the EMQ module and Valkey's ACL answer for themselves.
        user = acl.user_of(mine)
        as_user = redis.Redis.from_url(site.running()["url"], username=user, decode_responses=True,
                                       password=acl.password_of(datadir.load_secret(site.data_dir), user))
        direct = [reply_of(as_user, ["EMQ.COMPLETE", 2, f"emq:{{{mine}.native}}:active",
                                     f"emq:{{{mine}.native}}:job:X", "X", 1, base]) for base in bases[:2]]
        direct.append(reply_of(as_user, ["EMQ.COMPLETE", 2, f"emq:{{{theirs}.native}}:active",
                                         f"emq:{{{theirs}.native}}:job:X", "X", 1, f"emq:{{{theirs}.native}}:"]))
        after = sorted({k for k in r.scan_iter(count=1000) if not str(k).startswith("lab:")} - everything)
        script = "hold_parent 2 emq:{native}:job:JOBz emq:{native}:job:JOBz:dependencies JOBz p 3"
        wrote = console(learner, script).status_code
        teacher, _ = instructor(site.url)
        resets = [act(learner, "reset", "native").status_code,
                  teacher.post("/instructor/reset", json={"sandbox": mine}).status_code,
                  teacher.post("/instructor/reset", json={"all": True}).status_code]
        left = {k: r.ttl(k) for k in r.scan_iter(match=f"emq:{{{mine}.native}}:job:JOBz*")}
    return [
        Row(f"{lines} console lines `EMQ.COMPLETE 2 emq:{{native}}:active emq:{{native}}:job:X X 1 <base>`, the "
            "base outside the learner's `emq:{…}:` (LLL{id.native}:, another sandbox's, a metrics: suffix, none)",
            counted(a.status_code for a in answers), None, None,
            " | ".join(sorted({said(a, 100) for a in answers})), all(a.status_code in (400, 403) for a in answers)),
        Row("keys made by those lines (every key but the site's own lab: records)", "—", None, None,
            f"{len(made)} new: {made[:4]}", not made),
        Row("the same sent straight to Valkey as the sandbox's ACL user (bases LLL{id.native}:, another "
            "sandbox's; then another sandbox's keys)", "—", None, None, " | ".join(direct),
            not after and all("base must be" in d or "NoPermission" in d for d in direct)),
        Row(f"`{script}` (a new job id, written by a course script), then the widget's Reset, the instructor's "
            "reset of the sandbox, reset-all", counted([wrote, *resets]), None, None,
            f"keys of JOBz left after all three (name: TTL): {left or 'none'}", not left),
    ]


def reply_of(conn: redis.Redis, args: list[Any]) -> str:
    try:
        return f"answered {conn.execute_command(*args)!r}"[:120]  # type: ignore[no-untyped-call]  # untyped in redis-py
    except redis.RedisError as exc:
        return f"{type(exc).__name__}: {exc}"[:120]
