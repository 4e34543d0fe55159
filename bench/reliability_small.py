"""Issue 28, item 10, the small ones, on two `emqlab serve` sites side by
side: `emqlab reset` reaching its site by its data directory and never the
other one; numbers that are not ASCII whole numbers in a console line;
learners' names with joiners and with stacked combining marks; a class
behind one NAT address."""

from __future__ import annotations

import time
from pathlib import Path

from bench.reliability_drive import Mode, Row, act, console, counted, deps, dumps, instructor, said, sandbox_of, visitor
from bench.reliability_procs import Serve, emqlab, scratch
from server.web.rates import WINDOW

NUMBERS = ("claim ² emq:{fanin}:pending emq:{fanin}:active emq:{fanin}: 30000",
           "claim 2 emq:{fanin}:pending emq:{fanin}:active emq:{fanin}: nan")
NAMES = {"👩\u200d💻 Ada (ZWJ)": "👩\u200d💻 Ada", "می\u200cخواهم (ZWNJ)": "می\u200cخواهم",
         "e + 40 combining acute accents": "e" + "\u0301" * 40}
# actions per 10 s: a visitor, an address (all its visitors), a class
RATES = {"EMQLAB_RATE_LIMIT": "10", "EMQLAB_ADDRESS_RATE_LIMIT": "20", "EMQLAB_ROOM_RATE_LIMIT": "400"}


def reset_by_folder(first: Serve, second: Serve, work: Path) -> list[Row]:
    ada, bob = visitor(first.url), visitor(second.url)
    acted = [act(ada, "complete-child").status_code, act(bob, "complete-child").status_code]
    printed = emqlab("reset", "--print-url", "--data-dir", str(first.data_dir))
    done = emqlab("reset", "--all", "--data-dir", str(first.data_dir))
    nowhere = emqlab("reset", "--all", "--data-dir", str(work / "no-site-here"))
    bare = emqlab("reset", "--all", cwd=work)  # no --data-dir, no EMQLAB_*: .emqlab in the working directory
    after = (deps(ada), deps(bob))
    return [
        Row("two sites on two data directories, a learner on each completes a child; "
            "`emqlab reset --print-url --data-dir <first>`", counted(acted) + f"; exit {printed.returncode}", None,
            None, f"prints {printed.stdout.strip()}; the first site's Valkey: {first.running()['url']}",
            printed.stdout.strip() == first.running()["url"]),
        Row("`emqlab reset --all --data-dir <first>`", f"exit {done.returncode}", None, None,
            f"{done.stdout.strip()[:90]}; :dependencies on the first site {after[0]}, on the second {after[1]}",
            done.returncode == 0 and after == (3, 2)),
        Row("`emqlab reset --all --data-dir <a folder no site runs on>`, then with no folder named in a "
            "directory without .emqlab", f"exit {nowhere.returncode}, exit {bare.returncode}", None, None,
            nowhere.stderr.strip()[:150], nowhere.returncode != 0 and bare.returncode != 0 and deps(bob) == 2),
    ]


def not_numbers(site: Serve) -> Row:
    learner = visitor(site.url)
    learner.get("/api/widgets/fanin/state")
    r, sandbox = site.redis(), sandbox_of(learner)
    before = dumps(r, sandbox, records=False)
    answers = [console(learner, line) for line in NUMBERS]
    same = dumps(r, sandbox, records=False) == before
    return Row(" and ".join(f"`{line}`" for line in NUMBERS), counted(a.status_code for a in answers), None, None,
               " | ".join(said(a, 110) for a in answers) + f"; the fan-in's keys byte-identical after: {same}",
               same and all(a.status_code == 400 for a in answers))


def names(site: Serve) -> list[Row]:
    teacher, _ = instructor(site.url)
    code = teacher.post("/instructor/rooms", json={"name": "Names"}).json()["room"]["code"]
    rows = []
    for label, name in NAMES.items():
        joined = visitor(site.url).post("/room/join", json={"code": code, "name": name},
                                        headers={"Accept": "application/json"})
        roster = [row["name"] for row in teacher.get(f"/instructor/rooms/{code}/roster.json").json()["learners"]]
        accepted = "40" not in label
        rows.append(Row(f"joining a class as {label}", str(joined.status_code), None, len(name.encode()),
                        f"on the roster: {name in roster}" + ("" if accepted else f"; said: {said(joined, 100)}"),
                        (joined.status_code == 200 and name in roster) if accepted
                        else (joined.status_code == 400 and name not in roster)))
    return rows


def behind_one_address(mode: Mode, site: Serve) -> Row:
    teacher, _ = instructor(site.url)
    code = teacher.post("/instructor/rooms", json={"name": "One NAT"}).json()["room"]["code"]
    size = mode.pick(12, 30)
    nat = "127.0.0.5"
    members = [visitor(site.url, nat) for _ in range(size)]
    joins = [m.post("/room/join", json={"code": code, "name": f"Learner {n}"},
                    headers={"Accept": "application/json"}).status_code for n, m in enumerate(members)]
    strangers = [visitor(site.url, "127.0.0.6") for _ in range(size)]
    if time.monotonic() % WINDOW > WINDOW - 4:  # the limits count in fixed windows: start a burst in a fresh one
        time.sleep(WINDOW - time.monotonic() % WINDOW + 0.05)
    inside = [act(m, "redeliver").status_code for m in members for _ in range(3)]
    outside = [act(s, "redeliver").status_code for s in strangers for _ in range(3)]
    return Row(f"{size} learners of one class behind {nat} join and act 3 times each; then {size} visitors "
               "in no class behind 127.0.0.6 do the same (limits: 10 actions a visitor, 20 an address, 400 a "
               "class, per 10 s)", f"joins: {counted(joins)}; the class: {counted(inside)}; no class: "
               f"{counted(outside)}", None, None,
               "the class is counted as a class, not as its one address; visitors outside a class share it",
               set(inside) == {200} and set(joins) == {200} and outside.count(429) > 0)


def small_ones(mode: Mode) -> list[Row]:
    work = scratch("small")
    with Serve(work / "first", env=RATES) as first, Serve(work / "second") as second:
        rows = reset_by_folder(first, second, work)
        rows.append(not_numbers(first))
        rows += names(first)
        rows.append(behind_one_address(mode, first))
    return rows

