"""Issue 28, items 1 to 3, as an operator meets them: a fresh machine's
`make` targets, a restart of `emqlab serve` on its data directory during a
class, and a `kill -9` of the valkey-server it manages."""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

from bench.reliability_drive import (
    ROOT,
    Mode,
    Row,
    act,
    client,
    counted,
    deps,
    instructor,
    said,
    status_of,
    visitor,
    wait_for,
)
from bench.reliability_procs import Serve, Watch, scratch, state_of
from server.sandboxes.sandbox import COOKIE

# What test_make_installs.py reads, kept in step by hand: bench must not import tests.
GIVEN = {"python", "python3", "make", "git"}
NAME = r"([A-Za-z0-9_.+-]+)"
LOOKUPS = (
    re.compile(rf'shutil\.which\(\s*"{NAME}"'),
    re.compile(rf'\b(?:run|Popen|check_output|check_call|call)\(\s*\[\s*"{NAME}"'),
    re.compile(rf'create_subprocess_exec\(\s*"{NAME}"'),
    re.compile(rf'"/usr/s?bin/{NAME}"'),
)
# target -> the code whose lookups it must cover (the test suites share tests/*.py)
TARGETS = {
    "test-unit": ["tests/unit/**/*.py", "tests/*.py"],
    "test-integration": ["tests/integration/**/*.py", "tests/*.py"],
    "test-e2e": ["tests/e2e/**/*.py", "tests/*.py"],
    "bench": ["bench/*.py"],
    "reliability": ["bench/reliability*.py"],
}
# valkey-server is started by server/valkey/process.py for every suite but the unit tests
STARTS_VALKEY = {"test-integration", "test-e2e", "bench", "reliability"}


def looked_up(target: str) -> set[str]:
    files = {path for pattern in TARGETS[target] for path in ROOT.glob(pattern)
             # test_make_installs.py's own sample of a test file names programs it never runs;
             # bench/reliability*.py is `make reliability`'s, not `make bench`'s
             if path.name != "test_make_installs.py" and not (target == "bench" and path.name.startswith("reliab"))}
    return {name for path in files for rule in LOOKUPS for name in rule.findall(path.read_text())} - GIVEN


def plan_installs(plan: str) -> tuple[list[str], list[str]]:
    """(programs the plan checks for: `command -v`, or `[ -x .venv/bin/…]` before a pip install;
    packages it would apt-get install)."""
    checked = re.findall(rf"command -v {NAME}", plan) + re.findall(rf"\[ -x \S*/bin/{NAME} \]", plan)
    packages = [pkg for line in re.findall(r"apt-get[^\n;|&]*\binstall\b([^\n;|&}]*)", plan)
                for pkg in line.split() if not pkg.startswith("-") and pkg != "bookworm-backports"]
    return list(dict.fromkeys(checked)), list(dict.fromkeys(packages))


def fresh_machine(mode: Mode) -> list[Row]:
    rows = []
    for target in TARGETS:
        started = time.monotonic()
        done = subprocess.run(["make", "-n", target], cwd=ROOT, capture_output=True, text=True, check=False,
                              timeout=60)
        checked, packages = plan_installs(done.stdout)
        wanted = looked_up(target) | ({"valkey-server"} if target in STARTS_VALKEY else set())
        missing = sorted(name for name in wanted if name not in checked and name not in packages)
        rows.append(Row(
            f"`make -n {target}`", f"exit {done.returncode}", round(time.monotonic() - started, 2), None,
            f"checks for: {', '.join(checked) or 'nothing'}; apt-get installs: {', '.join(packages) or 'nothing'}; "
            f"its code looks up: {', '.join(sorted(wanted)) or 'nothing'}; not installed by it: "
            f"{', '.join(missing) or 'none'}", done.returncode == 0 and not missing))
    return rows


def size_of(folder: Path) -> int:
    return sum(path.stat().st_size for path in folder.rglob("*") if path.is_file())


def restart(mode: Mode) -> list[Row]:
    work = scratch("restart")
    site = Serve(work)
    with site:
        teacher, signed = instructor(site.url)
        opened = teacher.post("/instructor/rooms", json={"name": "Tuesday flows"})
        code = opened.json()["room"]["code"]
        pupil = visitor(site.url)
        joined = pupil.post("/room/join", json={"code": code, "name": "Ada"}, headers={"Accept": "application/json"})
        acted = [act(pupil, "complete-child").status_code for _ in range(2)]
        before = deps(pupil)
        second = Serve(work / "second", data_dir=site.data_dir)
        refused = second.launch().wait(timeout=60)
        holder = site.proc.pid if site.proc else 0
        time.sleep(1.2)  # appendfsync everysec: Valkey writes its append-only file each second
    stopped = site.stop()
    kept = size_of(site.data_dir / "valkey")
    rows = [
        Row("before: the instructor signs in (form), opens a class; Ada joins and completes two children",
            counted([signed, opened.status_code, joined.status_code, *acted]), None, None,
            f"class {code}; Ada's :dependencies 3 → {before}",
            signed == 303 and opened.status_code == 201 and joined.status_code == 200 and before == 1),
    ]
    words = second.said().strip().splitlines()
    rows.append(Row("a second `emqlab serve` on the same data directory while the first runs", f"exit {refused}",
                    None, None, words[-1][:160] if words else "(nothing said)",
                    refused != 0 and f"process {holder}" in second.said()))
    again = Serve(work, data_dir=site.data_dir)
    with again:
        rows.append(Row("`emqlab serve` stopped with Ctrl-C, started again on the same `--data-dir`",
                        f"exit {stopped}", again.took, kept,
                        f"serving again {again.took} s after the start; bytes: the data directory's valkey/ folder",
                        stopped == 0))
        # the same browsers (their cookies) on the site's new port
        teacher, pupil = client(again.url, cookies=teacher.cookies), client(again.url, cookies=pupil.cookies)
        roster = teacher.get(f"/instructor/rooms/{code}/roster.json")
        learners = roster.json().get("learners", []) if roster.status_code == 200 else []
        names = [row["name"] for row in learners]
        progress = ", ".join(f"{widget}: {p.get('reached')} of {p.get('steps')} steps" for widget, p in
                             (learners[0]["progress"] if learners else {}).items())
        rows.append(Row("the instructor's roster, with the cookie from before the restart",
                        str(roster.status_code), None, len(roster.content),
                        f"learners: {names}; Ada's progress: {progress}",
                        roster.status_code == 200 and names == ["Ada"] and bool(progress)))
        page = teacher.get(f"/instructor/rooms/{code}")
        overview = teacher.get("/instructor/overview")
        rows.append(Row("the class page and the instructor's overview (still signed in)",
                        counted([page.status_code, overview.status_code]), None, None,
                        f"the class page names 'Tuesday flows': {'Tuesday flows' in page.text}",
                        page.status_code == 200 and overview.status_code == 200 and "Tuesday flows" in page.text))
        room = pupil.get("/room")
        now = deps(pupil)
        after = act(pupil, "complete-child")
        rows.append(Row("Ada's /room, her fan-in, then her next action",
                        counted([room.status_code, after.status_code]), None, None,
                        f"still in class {code}: {code in room.text}; :dependencies {now} (was {before}); "
                        f"the action: {said(after, 60) or 'answered'}",
                        room.status_code == 200 and code in room.text and now == before and after.status_code == 200))
    return rows


def kill_valkey(mode: Mode) -> list[Row]:
    work = scratch("kill")
    with Serve(work) as site:
        pupil = visitor(site.url)
        first = act(pupil, "complete-child").status_code
        before = deps(pupil)
        time.sleep(1.2)  # appendfsync everysec: the last second may be lost by a kill, as Valkey documents
        [old] = site.valkeys()
        logged = len(site.said().splitlines())
        with Watch(site.url, pupil.cookies.get(COOKIE) or "") as page:
            wait_for(lambda: page.after(0, "widget"), 10)
            killed = time.monotonic()
            os.kill(old, signal.SIGKILL)
            codes: list[int] = []

            def acts() -> bool:
                codes.append(status_of(lambda: pupil.post("/api/widgets/fanin/claim", json={}, timeout=5)))
                return codes[-1] == 200

            back, seconds = wait_for(acts, mode.pick(20.0, 40.0), every=0.1)
            zombie = state_of(old)
            new = [pid for pid in site.valkeys() if pid != old]
            kept = deps(pupil)
            wait_for(lambda: page.after(killed + seconds, "widget"), 10)
            time.sleep(mode.pick(0.5, 5.0))  # would the log go on repeating itself?
            painted = page.after(killed, "widget")
            reopened = page.opened
        lines = site.said().splitlines()[logged:]
    return [
        Row("a learner completes a child; a page of theirs streams", str(first), None, None,
            f":dependencies 3 → {before}", first == 200 and before == 2),
        Row("`kill -9` of the managed valkey-server, then Claim every 0.1 s until one answers 200",
            counted(codes), seconds if back else None, None,
            f"{'200 after ' + str(seconds) + ' s' if back else 'no 200 within ' + str(seconds) + ' s'}; "
            f"a new valkey-server: pid {new[0] if new else 'none'}", bool(back) and seconds <= 10),
        Row("the killed process, and the learner's work", "—", None, None,
            f"pid {old}: {'gone (reaped)' if zombie is None else 'state ' + zombie}; "
            f":dependencies {kept} (was {before}, the Claim moved no counter)", zombie is None and kept == before),
        Row("the page's stream, as a browser's EventSource follows it", "—",
            next((s for s in painted if s >= seconds), None), None,
            f"opened {reopened} times; snapshots after the kill at {painted[:6]} s",
            any(s >= seconds for s in painted)),
        Row("the site's log from the kill on", "—", None, sum(len(line) + 1 for line in lines),
            f"{len(lines)} lines: " + " / ".join(line[:110] for line in lines[:3]), len(lines) <= 5),
    ]

