"""The race lab on a real Valkey: real workers, each its own connection, through the course's
scripts; the invariants read from the keys after each run."""

from __future__ import annotations

import asyncio
import html
import json
import re
import threading
import time
from collections.abc import Callable
from typing import Any

import httpx
from starlette.templating import Jinja2Templates

from server.emq import keyspace
from server.sandboxes import keys
from server.widgets import WIDGETS, reader, runner, specimen
from server.widgets.draw import Drawing
from server.widgets.race_run import PARENT, Plan, Race, child_ids
from server.widgets.race_workers import fence
from server.widgets.turn import Actor
from tests.support import ROOT, LiveSite, running, sandbox_of, streaming
from tests.widgets import SANDBOX, act, catalog, lab, snapshot_of

FAULTS = ["crash", "lapse", "twice"]
SEEDS = range(50)
Q = f"{SANDBOX}.race"


async def race(conn: Any, seed: int, early: bool = False, **more: Any) -> dict[str, Any]:
    body = {"workers": 3, "children": 4, "faults": FAULTS, "early_release": early, "seed": seed, **more}
    await act(conn, "race", "run", **body)
    snap = await snapshot_of(conn, "race")
    assert snap.picture is not None
    return snap.picture


async def invariants_from_keys(conn: Any, n: int) -> dict[str, bool]:
    """The three rules judged here again, straight from Valkey's keys."""
    deps = await conn.get(keyspace.dependencies_key(Q, PARENT))
    processed = await conn.hgetall(keyspace.processed_key(Q, PARENT))
    state = await conn.hget(keyspace.job_key(Q, PARENT), "state")
    completed = int(await conn.hget(keyspace.queue_key(Q, "metrics:completed"), "count") or 0)
    waiting = 0
    for child in child_ids(n):
        for name in ("pending", "active", "schedule"):
            if await conn.zscore(keyspace.queue_key(Q, name), child) is not None \
                    and await conn.exists(keyspace.job_key(Q, child)):
                waiting += 1
    counted = int(deps) >= 0 and n - int(deps) == len(processed)
    released = state != "awaiting_children"
    return {"counted-once": counted,
            "released-once": int(deps) >= 0 and (not released or (len(processed) == n and int(deps) == 0)),
            "none-lost": completed + waiting >= n}


async def test_fifty_seeds_with_every_fault_keep_every_invariant_on_the_course_scripts(conn: Any) -> None:
    for seed in SEEDS:
        picture = await race(conn, seed)
        shown = {i["id"]: i["held"] for i in picture["invariants"]}
        assert shown == {"counted-once": True, "released-once": True, "none-lost": True}, (seed, picture)
        assert await invariants_from_keys(conn, 4) == shown, seed
        assert picture["timeline"] and picture["seed"] == seed


async def test_the_early_release_script_breaks_an_invariant_on_some_seed_and_the_widget_names_it(conn: Any) -> None:
    broken: dict[int, list[str]] = {}
    for seed in SEEDS:
        picture = await race(conn, seed, early=True, faults=["lapse"])
        names = [i["id"] for i in picture["invariants"] if not i["held"]]
        assert names == [k for k, v in (await invariants_from_keys(conn, 4)).items() if not v]
        if names:
            broken[seed] = names
            break
    assert broken, "no seed of 50 broke an invariant with the early-release complete"
    snap = await snapshot_of(conn, "race")
    assert snap.readout.endswith(f"({', '.join(names)} broke).")
    # each broken invariant's why is drawn once, in the picture's invariant list, not again in the
    # readout nor in a paragraph of its own
    typed = (await reader.snapshot(conn, catalog(), WIDGETS["race"], SANDBOX))[1]  # as the page draws it
    drawn = Drawing(Jinja2Templates(directory=str(ROOT / "site" / "templates")).env).html(WIDGETS["race"], typed)
    for why in (i["text"] for i in picture["invariants"] if not i["held"]):
        assert why not in snap.readout
        assert drawn.count(html.escape(why, quote=False)) == 1, why


async def test_the_timeline_names_the_fenced_late_completion_in_valkeys_words(conn: Any) -> None:
    replies = []
    for seed in range(12):
        replies += [e["reply"] for e in (await race(conn, seed, faults=["lapse", "twice"]))["timeline"]]
    assert any(r.startswith("EMQSTALE complete token mismatch") for r in replies)
    assert any(r.startswith("0: the row is gone") for r in replies)
    assert any(r.startswith("1: counted, :dependencies") for r in replies)


async def test_during_a_run_client_list_shows_one_connection_per_worker(conn: Any) -> None:
    seen: list[int] = []

    async def watch() -> None:
        for _ in range(200):
            names = [c.get("name", "") for c in await conn.client_list()]
            seen.append(sum(n.startswith("emqlab-race-w") for n in names))
            await asyncio.sleep(0.01)

    watcher = asyncio.create_task(watch())
    await race(conn, 3, workers=5, children=12, faults=["lapse"])
    watcher.cancel()
    assert max(seen) == 5
    names = [c.get("name", "") for c in await conn.client_list()]
    assert not any(n.startswith("emqlab-race-w") for n in names)  # every worker's connection closed after


async def test_a_run_fenced_before_its_workers_start_ends_at_a_lost_connection_and_writes_nothing(conn: Any) -> None:
    # another process's Reset may take the lock the moment the Run lets it go and fence the workers
    # before the first of them loads the scripts: the run ends as a fenced one does, not as a fault
    state = keys.state_key(Q)
    race = Race(conn, Q, state, Plan(3, 4, (), False, 1))
    await fence(conn, Q, await race.connect())
    assert await race.run() == "a lost connection"
    assert await conn.hget(state, "race:n") is None
    assert not [c for c in await conn.client_list() if c.get("name", "").startswith("emqlab-race-w")]


async def test_a_reset_kills_no_connection_but_its_own_runs_workers_whatever_ids_its_run_marker_names(
        conn: Any) -> None:
    # a restarted Valkey (its append-only file kept the marker) gives out CLIENT IDs from 1 again: for
    # the marker's few seconds, its IDs may be another sandbox's race workers, or the site's connections
    await act(conn, "race", "reset")
    elsewhere = "s0elsewhere.race"
    other = Race(conn, elsewhere, keys.state_key(elsewhere), Plan(2, 4, (), False, 1))
    ids = await other.connect()
    try:
        stale = {"status": "running", "until": int((time.time() + 5) * 1000), "clients": ids, "by": "gone"}
        await conn.hset(keys.state_key(Q), "run", json.dumps(stale))
        await act(conn, "race", "reset")
        alive = {int(c["id"]) for c in await conn.client_list()}
        assert set(ids) <= alive, (ids, alive)
    finally:
        await other.close()


async def test_every_sandbox_and_the_specimen_draw_the_same_recorded_run_even_landed_at_once_under_load(
        conn: Any) -> None:
    # a first paint comes from the specimen and the visitor's own first frame replaces it: the two
    # recorded runs must be one timeline, line for line, whatever else the machine is doing meanwhile
    busy = threading.Event()

    def burn() -> None:  # a CPU-bound neighbour in this very process: the workers' turns come late
        while not busy.is_set():
            sum(range(10_000))

    burner = threading.Thread(target=burn)
    burner.start()
    try:
        owners = [Actor(f"s{i:010d}", f"s{i:010d}") for i in range(4)] + [specimen.OWNER]
        shown = await asyncio.gather(*(runner.show(lab(conn), WIDGETS["race"], o) for o in owners))
    finally:
        busy.set()
        burner.join()
    drawing = Drawing(Jinja2Templates(directory=str(ROOT / "site" / "templates")).env)
    drawn = [drawing.html(WIDGETS["race"], snap) for snap in shown]
    timelines = [re.findall(r'<table class="race-timeline".*?</table>', d, re.S) for d in drawn]
    assert timelines[0] and all(t == timelines[0] for t in timelines), timelines
    assert len({s.readout for s in shown}) == 1, [s.readout for s in shown]
    assert all('data-role="race-recorded"' in d for d in drawn)


def running_now(client: httpx.Client) -> None:
    """Until the sandbox's run is going (its state says so)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        state = client.get("/api/widgets/race/state").json()["snapshot"]
        if state["picture"] and state["picture"]["status"] == "running":
            return
        time.sleep(0.02)
    raise AssertionError("the run never showed as running")


def second_page(site: LiveSite, first: httpx.Client, tab: str) -> httpx.Client:
    """Another page of the same sandbox: the same cookies, a tab of its own."""
    other = site.client(headers={"X-Emqlab-Tab": tab, "Origin": site.url})
    other.cookies.update(first.cookies)
    return other


def test_a_second_run_during_a_run_answers_409_and_a_reset_from_another_page_stops_it_and_lands_the_flow(
        clean: LiveSite) -> None:
    client = clean.visitor("/flows/under-fire")
    headers = {"Origin": clean.url, "X-Emqlab-Tab": "one"}
    other = second_page(clean, client, "two")
    body = {"workers": 4, "children": 16, "faults": ["lapse"], "early_release": False, "seed": 1}
    answers: list[httpx.Response] = []
    first = threading.Thread(target=lambda: answers.append(
        client.post("/api/widgets/race/run", json=body, headers=headers, timeout=20)))
    first.start()
    running_now(other)
    second = other.post("/api/widgets/race/run", json=body, timeout=20)
    assert second.status_code == 409, second.text
    assert "still going" in second.json()["error"]
    reset = other.post("/api/widgets/race/reset", json={}, timeout=20)
    assert reset.status_code == 200, reset.text
    first.join(20)
    assert answers and answers[0].status_code == 200
    assert answers[0].json()["outcome"]["text"] == "The run was stopped by a Reset."
    picture = client.get("/api/widgets/race/state").json()["snapshot"]["picture"]
    assert picture["status"] == "ready" and picture["timeline"] == []
    # the flow landed again through the scripts: the parent held on every child
    r, q = clean.redis(), f"{sandbox_of(client)}.race"
    assert r.hget(keyspace.job_key(q, PARENT), "state") == "awaiting_children"
    assert r.get(keyspace.dependencies_key(q, PARENT)) == "6"
    assert sorted(r.zrange(keyspace.queue_key(q, "pending"), 0, -1)) == child_ids(6)
    again = client.post("/api/widgets/race/run", json={**body, "children": 3}, headers=headers, timeout=20)
    assert again.status_code == 200 and "Seed 1" in again.json()["outcome"]["text"]


def test_a_reset_sent_to_another_site_process_fences_the_run_so_no_worker_writes_after_it(clean: LiveSite) -> None:
    # the run's workers live in the first process; the Reset reaches the second, which cannot cancel
    # them: it kills their connections on Valkey's side, and the run's last words are not written
    client = clean.visitor("/flows/under-fire")
    body = {"workers": 4, "children": 16, "faults": ["lapse"], "early_release": False, "seed": 1}
    # a second process of the same site: the same Valkey, the same data directory (its cookie secret)
    with running(clean.valkey_url, {"EMQLAB_DATA_DIR": clean.env["EMQLAB_DATA_DIR"]}) as elsewhere:
        other = elsewhere.client(headers={"X-Emqlab-Tab": "two", "Origin": elsewhere.url})
        other.cookies.update(client.cookies)
        answers: list[httpx.Response] = []
        first = threading.Thread(target=lambda: answers.append(client.post(
            "/api/widgets/race/run", json=body, headers={"Origin": clean.url, "X-Emqlab-Tab": "one"}, timeout=20)))
        first.start()
        running_now(other)
        reset = other.post("/api/widgets/race/reset", json={}, timeout=20)
        assert reset.status_code == 200, reset.text
        r, q = clean.redis(), f"{sandbox_of(client)}.race"
        assert not [c for c in r.client_list() if c.get("name", "").startswith("emqlab-race-w")], r.client_list()
        first.join(20)
    assert answers and answers[0].status_code == 200
    assert answers[0].json()["outcome"]["text"] == "The run was stopped by a Reset."
    picture = client.get("/api/widgets/race/state").json()["snapshot"]["picture"]
    assert picture["status"] == "ready" and picture["timeline"] == []
    assert r.hget(keyspace.job_key(q, PARENT), "state") == "awaiting_children"
    assert r.get(keyspace.dependencies_key(q, PARENT)) == "6"
    assert sorted(r.zrange(keyspace.queue_key(q, "pending"), 0, -1)) == child_ids(6)
    assert r.zcard(keyspace.queue_key(q, "active")) == 0


def test_five_runs_at_once_from_five_tabs_race_once_and_the_others_answer_409(clean: LiveSite) -> None:
    client = clean.visitor("/flows/under-fire")
    tabs = [second_page(clean, client, f"tab{n}") for n in range(5)]
    body = {"workers": 3, "children": 4, "faults": ["crash", "twice"], "seed": 3}
    answers: list[httpx.Response] = []
    threads = [threading.Thread(target=lambda tab=tab: answers.append(
        tab.post("/api/widgets/race/run", json=body, timeout=30))) for tab in tabs]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    codes = sorted(a.status_code for a in answers)
    assert codes == [200, 409, 409, 409, 409], codes
    # the keys hold one finished run of those choices, as one Run alone leaves them
    picture = client.get("/api/widgets/race/state").json()["snapshot"]["picture"]
    assert picture["status"] == "done" and picture["seed"] == 3 and picture["timeline"]
    q = f"{sandbox_of(client)}.race"
    assert clean.redis().hlen(keyspace.job_key(q, PARENT) + ":processed") <= 4


def test_another_page_sees_the_timeline_fill_while_the_run_goes(clean: LiveSite) -> None:
    client = clean.visitor("/flows/under-fire")
    other = second_page(clean, client, "two")
    body = {"workers": 2, "children": 16, "faults": ["lapse"], "seed": 4}
    frames: list[dict[str, Any]] = []
    with streaming(other, widgets="race", page="/flows/under-fire") as events:
        events.until("widget")  # the page's first paint
        runner = threading.Thread(target=lambda: client.post(
            "/api/widgets/race/run", json=body, headers={"Origin": clean.url}, timeout=20))
        runner.start()
        # this run's end: the first showing's recorded run (seed 2) may still send its own finish after the paint
        frames = [data for event, data in events.until("widget", timeout=20, where=lambda d: 'data-status="done"'
                                                       in d["html"] and 'race-seed-shown">4<' in d["html"])
                  if event == "widget"]
        runner.join(20)
    # no frame of a half-landed widget (the first showing's, the Run's fresh flow): never drawn empty at ver 0
    assert all(f["ver"] and 'data-status="' in f["html"] for f in frames), [f["ver"] for f in frames]
    rows = [len(re.findall(r"<tr data-op=", f["html"])) for f in frames if 'data-status="running"' in f["html"]]
    assert rows and max(rows) >= 1, "no frame showed the run going with answers on its timeline"
    assert rows == sorted(rows), rows  # the timeline only grows while it goes
    done = len(re.findall(r"<tr data-op=", frames[-1]["html"]))
    assert done >= max(rows)


def test_a_run_with_bad_choices_answers_400_and_writes_nothing(clean: LiveSite) -> None:
    client = clean.visitor("/flows/under-fire")
    for bad in ({"workers": 9}, {"children": 2}, {"faults": ["fire"]}, {"seed": -1}):
        answer = client.post("/api/widgets/race/run", json=bad, headers={"Origin": clean.url})
        assert answer.status_code == 400, (bad, answer.text)


def test_a_first_showing_whose_workers_lose_their_connections_plays_the_recorded_run_again_not_a_cut_one(
        clean: LiveSite) -> None:
    # Valkey dropping the workers' connections (a restart, a kill, an operator) mid-way through the
    # recorded run must not leave a sandbox a "recorded run" of its own, cut short: the showing says
    # so (503, in words) and the next one lands the flow again and plays the one recorded run
    reference = clean.visitor("/flows/under-fire").get("/api/widgets/race/state").json()["snapshot"]["picture"]
    r = clean.redis()
    killed = 0
    for _ in range(4):
        client = clean.visitor("/")
        mine = f"@{sandbox_of(client)}.race"
        showing = threading.Thread(target=lambda c=client: c.get("/api/widgets/race/state", timeout=30))
        showing.start()
        while showing.is_alive():  # the workers' connections killed the moment they appear, once
            found = [c["id"] for c in r.client_list() if c.get("name", "").endswith(mine)]
            if found:
                killed += sum(r.client_kill_filter(_id=i) for i in found)
                break
        showing.join(30)
        deadline = time.monotonic() + 15
        while (answer := client.get("/api/widgets/race/state")).status_code != 200:
            assert answer.status_code == 503, answer.text
            assert time.monotonic() < deadline, answer.text
            time.sleep(0.1)
        picture = answer.json()["snapshot"]["picture"]
        assert picture["recorded"] and picture["ended"] == reference["ended"], picture["ended"]
        assert picture["timeline"] == reference["timeline"]
    assert killed, "no worker connection was killed mid-showing: the test proved nothing"


def run_going(clean: LiveSite) -> tuple[httpx.Client, threading.Thread, list[httpx.Response]]:
    """A learner's Run (4 workers, 16 children, lapses) sent from a thread, once it shows as running:
    the learner, the thread, and the list its answer lands in."""
    client = clean.visitor("/flows/under-fire")
    body = {"workers": 4, "children": 16, "faults": ["lapse"], "early_release": False, "seed": 1}
    answers: list[httpx.Response] = []
    first = threading.Thread(target=lambda: answers.append(client.post(
        "/api/widgets/race/run", json=body, headers={"Origin": clean.url, "X-Emqlab-Tab": "one"}, timeout=20)))
    first.start()
    running_now(client)
    return client, first, answers


def run_whose_keys_vanish(clean: LiveSite, then: Callable[[httpx.Client], object] = lambda client: None) -> str:
    """A learner's Run whose keys are deleted mid-run, as a flush or a restart without data leaves them
    (nobody pressed Reset); `then` runs before the Run ends. What the Run answered."""
    client, first, answers = run_going(clean)
    r, q = clean.redis(), f"{sandbox_of(client)}.race"
    for key in r.scan_iter(match=f"*{{{q}}}*"):
        r.delete(key)
    then(client)
    first.join(20)
    assert answers and answers[0].status_code == 200, answers and answers[0].text
    assert client.get("/api/widgets/race/state").status_code == 200
    return str(answers[0].json()["outcome"]["text"])


def test_a_run_whose_keys_vanish_under_it_says_so_not_that_a_reset_stopped_it(clean: LiveSite) -> None:
    said = run_whose_keys_vanish(clean)
    assert said.startswith("The run's keys are gone from Valkey"), said


def test_a_run_whose_keys_vanish_and_a_page_lands_the_flow_again_is_not_said_stopped_by_a_reset(
        clean: LiveSite) -> None:
    # then the learner's other tab (or a reload) shows the page: it lands the flow again before the Run
    # takes the lock back, and `landed` alone read as a Reset
    def other_tab(client: httpx.Client) -> None:
        assert second_page(clean, client, "two").get("/api/widgets/race/state").status_code == 200

    said = run_whose_keys_vanish(clean, other_tab)
    assert not said.startswith("The run was stopped by a Reset"), said


def test_a_deep_link_followed_during_a_run_leaves_no_worker_of_that_run_racing_on_the_flow_it_replays(
        clean: LiveSite) -> None:
    # `#race-step=1` opened in another tab while a Run races: the tour's step clears the keys and replays
    # the recorded run on them; the Run's workers must not race beside (and claim from) that replay, as
    # after a Reset they never do
    client, first, _ = run_going(clean)
    r, mine = clean.redis(), f"@{sandbox_of(client)}.race"
    theirs = {c["id"] for c in r.client_list() if c.get("name", "").endswith(mine)}
    assert theirs, "the run's workers were never seen connected: the test proved nothing"
    linked: list[httpx.Response] = []
    link = threading.Thread(target=lambda: linked.append(second_page(clean, client, "two").post(
        "/api/widgets/race/goto", json={"step": 1, "link": "#race-step"}, timeout=20)))
    link.start()
    beside = 0  # looks at Valkey's clients that saw the replay's workers and the run's at once
    while link.is_alive():
        now = {c["id"] for c in r.client_list() if c.get("name", "").endswith(mine)}
        beside += bool(now - theirs and now & theirs)
        time.sleep(0.01)
    first.join(20)
    assert linked and linked[0].status_code in (200, 409), linked and linked[0].text
    assert not beside, f"the run's workers raced beside the step's replay ({beside} looks saw both)"
