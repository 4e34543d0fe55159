"""Issue 28, item 5: one console line that changes a key's type, then every
reset there is — the learner's Reset, the instructor's reset of that
sandbox, "Reset every learner", reset-all from the page and from the shell —
and the reaper, on `emqlab serve`. Each must answer below 500, and the
fan-in must work again after it."""

from __future__ import annotations

import time

import httpx

from bench import reliability_drive as drive
from bench.reliability_drive import Mode, Row, act, console, counted, deps, keys_of, said, wait_for
from bench.reliability_procs import Serve, emqlab, scratch
from server.sandboxes.keys import REGISTRY_KEY

TYPE_CHANGING = "hold_parent 2 emq:{fanin}:job:JOBx emq:{fanin}:pending JOBx p 3"
OUTBOX_CHANGING = "hold_parent 2 emq:{outbox.mail}:job:JOBy emq:{outbox.mail}:flow:outbox JOBy p 3"


def works_again(learner: httpx.Client) -> tuple[list[int], bool]:
    """Complete a child on a freshly landed fan-in: (statuses, whether the counter went 3 → 2)."""
    done = act(learner, "complete-child")
    return [done.status_code], done.status_code == 200 and deps(learner) == 2


def after_reset(tried: str, reset: list[int], learner: httpx.Client, note: str = "", exit_status: int = 0) -> Row:
    """The row of one reset (`exit_status`: of a reset run from a shell), and the fan-in's next click."""
    codes, ok = works_again(learner)
    shell = f"exit {exit_status}, " if reset == [] else ""
    return Row(tried, shell + counted([*reset, *codes]), None, None,
               f"{note}{'; ' if note else ''}then Complete child: the fan-in works again: {ok}",
               all(0 < c < 500 for c in reset) and exit_status == 0 and ok)


def corrupt(learner: httpx.Client) -> int:
    learner.get("/api/widgets/fanin/state")  # a widget a reset landed again lands on its first read
    return console(learner, TYPE_CHANGING).status_code


def resets(mode: Mode) -> list[Row]:
    work = scratch("resets")
    # the shortest idle time the settings allow, and a reaper looking every second
    env = {"EMQLAB_SANDBOX_TTL": "10", "EMQLAB_STREAM_LIFETIME": "10", "EMQLAB_REAP_EVERY": "1"}
    rows = []
    with Serve(work, env=env) as site:
        teacher, _ = drive.instructor(site.url)
        code = teacher.post("/instructor/rooms", json={"name": "Resets"}).json()["room"]["code"]
        ada, grace = drive.visitor(site.url), drive.visitor(site.url)
        for learner, name in ((ada, "Ada"), (grace, "Grace")):
            learner.post("/room/join", json={"code": code, "name": name}, headers={"Accept": "application/json"})
            act(learner, "complete-child")
        sandbox = drive.sandbox_of(ada)
        line = corrupt(ada)
        state = ada.get("/api/widgets/fanin/state")
        problem = state.json()["snapshot"].get("problem") if state.status_code == 200 else said(state)
        refused = act(ada, "complete-child")
        reset = act(ada, "reset").status_code
        rows.append(after_reset(f"`{TYPE_CHANGING}` in Ada's console; her fan-in's state, Complete child, her Reset",
                                [line, state.status_code, refused.status_code, reset], ada,
                                f"the line: {line}; the widget says: {problem}; Complete child: {said(refused, 80)}"))
        one = [corrupt(ada), teacher.post(f"/instructor/rooms/{code}/learners/{sandbox}/reset", json={}).status_code]
        rows.append(after_reset("the line again, then the instructor's reset of Ada (class page)", one, ada))
        line = corrupt(ada)
        again = teacher.post("/instructor/reset", json={"sandbox": sandbox})
        one = [line, again.status_code]
        rows.append(after_reset("the line again, then the instructor's reset of her sandbox by id (/instructor)",
                                one, ada, said(again, 80)))
        corrupt(ada)
        every = teacher.post(f"/instructor/rooms/{code}/reset-learners", json={"confirm": True})
        grace_ok = deps(grace) == 3
        rows.append(after_reset("the line again, then \"Reset every learner\"", [every.status_code], ada,
                                f"{said(every, 100)}; Grace's fan-in landed afresh too: {grace_ok}"))
        corrupt(ada)
        everyone = teacher.post("/instructor/reset", json={"all": True})
        failed = everyone.json().get("failed") if everyone.status_code == 200 else None
        rows.append(after_reset("the line again, then reset-all from /instructor", [everyone.status_code], ada,
                                f"{said(everyone, 80)} failed: {failed}"))
        line = corrupt(ada)
        shell = emqlab("reset", "--all", "--data-dir", str(site.data_dir))
        rows.append(after_reset("the line again, then `emqlab reset --all --data-dir <dir>` from a shell", [], ada,
                                f"the line: {line}; said: {drive.last_line(shell.stdout + shell.stderr)}",
                                shell.returncode))
        rows.append(outbox_line(ada))
        rows.append(reaped(mode, site, ada, sandbox))
    return rows


def outbox_line(learner: httpx.Client) -> Row:
    learner.get("/api/widgets/outbox/state")
    line = console(learner, OUTBOX_CHANGING).status_code
    ticks = [act(learner, "pump-tick", "outbox") for _ in range(2)]
    reset = act(learner, "reset", "outbox").status_code
    done = act(learner, "complete-child", "outbox").status_code
    tick = act(learner, "pump-tick", "outbox")
    codes = [line, *(t.status_code for t in ticks), reset, done, tick.status_code]
    return Row(f"`{OUTBOX_CHANGING}` (the outbox list made a string), Pump tick ×2, Reset, Complete child, "
               "Pump tick", counted(codes), None, None, f"the tick: {said(ticks[0], 90)}; after Reset: "
               f"{said(tick, 90)}", all(0 < c < 500 for c in codes) and tick.status_code == 200)


def reaped(mode: Mode, site: Serve, learner: httpx.Client, sandbox: str) -> Row:
    """The line again, then nobody acts: the reaper removes the sandbox whatever its keys hold."""
    r = site.redis()
    corrupt(learner)
    held = len(keys_of(r, sandbox))
    started = time.monotonic()
    if mode.quick:  # idle since the epoch, rather than waiting out the 10 s the settings allow at least
        r.zadd(REGISTRY_KEY, {sandbox: 1})
    # the reaper has acted once the sandbox is out of the registry and its widget's own keys are gone
    gone, _ = wait_for(lambda: (r.zscore(REGISTRY_KEY, sandbox) is None
                                and not r.exists(f"emq:{{{sandbox}.fanin}}:job:JOBparent")) or None,
                       mode.pick(15.0, 40.0), every=0.2)
    seconds = round(time.monotonic() - started, 2)
    time.sleep(1.0)  # a round more of the reaper: whatever it left, it leaves
    left = {key: r.ttl(key) for key in keys_of(r, sandbox)}
    back = deps(learner)  # the same cookie, landed again
    how = "its registry entry set idle since the epoch" if mode.quick else "nobody acting, a 10 s idle limit"
    return Row(f"the line again, then {how}; the reaper looks every second", "—", seconds if gone else None, None,
               f"{held} keys before; removed after {seconds} s except (name: TTL) {left or 'none'}; the learner's "
               f"next read lands the fan-in again (:dependencies {back})", bool(gone) and not left and back == 3)

