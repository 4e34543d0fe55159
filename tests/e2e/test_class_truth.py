"""Class tools that say what is true, as an instructor and two learners meet them in
Chromium (issue 41, items 10-12): every answer is kept by mode, round and step in
the instructor's downloads, demo votes too; a page a killed site left open stops
counting online, and an idle past before joining is no "Stuck"; no sentence names a
class that closed, a demo's disabled question does not say "answer, then press",
and a browser whose class cannot be checked is not told about "your class"."""

from __future__ import annotations

import csv
import io
import re
import signal
from collections.abc import Callable
from typing import Any

from playwright.sync_api import BrowserContext, Locator, Page, expect

from server.valkey.process import ValkeyProcess
from tests.e2e.conftest import Site
from tests.e2e.rooms import (
    DIVE,
    FANIN_QUESTION,
    LEGEND,
    answer_and_complete,
    class_site,
    counter,
    fanin,
    join_room,
    open_room,
    question,
    signed_in_instructor,
)

COLUMN = f"fanin {FANIN_QUESTION['id']}"


def on_dive(ctx: BrowserContext, code: str, name: str) -> Page:
    page = join_room(ctx, code, name)
    page.goto(DIVE)
    expect(counter(page)).to_have_text("3")
    return page


def row(class_page: Page, name: str) -> Locator:
    return class_page.locator("tr[data-learner]", has=class_page.locator('[data-role="name"]', has_text=name))


def class_box(page: Page) -> Locator:
    return page.get_by_role("region", name="Your class's question")


def vote(page: Page, value: int) -> None:
    """A demo's answer: in the class's question box (the widget's own field is read-only)."""
    box = class_box(page)
    box.locator('input[name="answer"]').fill(str(value))
    box.get_by_role("button", name="Send my answer").click()
    expect(box.locator('[data-role="class-ask-mine"]')).to_contain_text(f"Your answer {value}")


# -- item 10: every answer kept, by mode, round and step ------------------------------------------


def demo_asks_fanin_step_0(teacher: BrowserContext, class_page: Page) -> None:
    """The instructor opens the dive (a demo shows the sandbox of a page they opened), starts a
    demo and asks the class the fan-in's question at step 0."""
    drive = teacher.new_page()
    drive.goto(DIVE)
    expect(counter(drive)).to_have_text(re.compile(r"^\d$"))
    class_page.get_by_role("button", name="Start demo").click()
    picks = class_page.get_by_role("group", name="Question and step")
    picks.get_by_role("radio", name=re.compile(r"^fanin · step 0 .*" + re.escape(LEGEND))).check()
    class_page.get_by_role("button", name="Ask the class").click()


def test_every_answer_is_kept_by_mode_round_and_step_in_the_downloads_the_demo_votes_too(
        contexts: Callable[..., BrowserContext]) -> None:
    teacher = contexts()
    class_page = signed_in_instructor(teacher)
    code = open_room(class_page, "Kept e2e")
    ada, grace = on_dive(contexts(), code, "Ada"), on_dive(contexts(), code, "Grace")
    answer_and_complete(ada, 3)  # own sandbox: not quite
    answer_and_complete(grace, 2)  # own sandbox: right
    class_page.get_by_role("button", name="Work together").click()
    expect(ada.locator('[data-role="room-banner"]')).to_contain_text("working together")
    expect(question(ada).locator("legend")).to_have_text(LEGEND)
    answer_and_complete(ada, 2)  # the shared sandbox: right; her own-sandbox 3 must stay
    class_page.get_by_role("button", name="Back to own sandboxes").click()
    demo_asks_fanin_step_0(teacher, class_page)
    for page, value in ((ada, 2), (grace, 3)):
        expect(class_box(page)).to_contain_text(f"Your class is asked: {LEGEND}")
        vote(page, value)
    class_page.get_by_role("button", name=re.compile(r"^Press .* for the class$")).click()
    expect(class_page.locator('[data-role="flash"]')).to_contain_text("2 votes judged")

    got = teacher.request.get(f"/instructor/rooms/{code}/results.csv")
    assert got.status == 200, got.text()
    table = {r["name"]: r for r in csv.DictReader(io.StringIO(got.text()))}
    demo = f"{COLUMN} (demo, asked at step 0, round 1)"
    assert {name: (r[f"{COLUMN} (own)"], r[f"{COLUMN} (together)"], r[demo]) for name, r in table.items()} == {
        "Ada": ("3 (not quite)", "2 (right)", "2 (right)"),
        "Grace": ("2 (right)", "", "3 (not quite)"),
    }
    assert (table["Ada"]["class answers"], table["Ada"]["class answers right"]) == ("3", "2")
    kept: list[dict[str, Any]] = teacher.request.get(f"/instructor/rooms/{code}/answers.json").json()["questions"]
    counts = {(q["step"], q["round"]): sorted((a["value"], a["count"], a["right"]) for a in q["answers"])
              for q in kept if q["question"] == FANIN_QUESTION["id"]}
    assert counts == {(None, None): [(2, 2, True), (3, 1, False)], (0, 1): [(2, 1, True), (3, 1, False)]}


def test_the_question_box_is_the_server_drawing_at_first_paint_and_after_a_new_question_and_votes_without_script(
        contexts: Callable[..., BrowserContext]) -> None:
    teacher = contexts()
    class_page = signed_in_instructor(teacher)
    code = open_room(class_page, "Box e2e")
    ada, grace = on_dive(contexts(), code, "Ada"), on_dive(contexts(), code, "Grace")
    demo_asks_fanin_step_0(teacher, class_page)
    for page in (ada, grace):
        expect(class_box(page).locator('[data-role="class-ask-legend"]')).to_have_text(
            f"Your class is asked: {LEGEND}")
        page.evaluate("window.stayed = true")  # no reload from here on: the box follows in place
    # the first paint: the server's own drawing, for a page with a script and for one without
    assert f"Your class is asked: {LEGEND}" in grace.request.get(DIVE).text()
    linus = join_room(contexts(java_script_enabled=False), code, "Linus")
    linus.goto(DIVE)
    expect(linus.locator('[data-role="room-banner"]')).to_contain_text(f"Demo in class {code}: you are watching")
    expect(class_box(linus).locator('[data-role="class-ask-answered"]')).to_have_text("0 learners of 3 answered")
    class_box(linus).get_by_label("Your answer").fill("2")
    class_box(linus).get_by_role("button", name="Send my answer").click()  # a real form: 303 back to the dive
    expect(linus).to_have_url(re.compile(f"{DIVE}#class-ask$"))
    expect(class_box(linus).locator('[data-role="class-ask-mine"]')).to_contain_text("Your answer 2 is in")
    vote(ada, 2)  # with a script: sent without leaving the page
    class_page.get_by_role("button", name=re.compile(r"^Press .* for the class$")).click()
    expect(class_page.locator('[data-role="flash"]')).to_contain_text("2 votes judged")
    expect(class_box(ada).locator('[data-role="class-ask-mine"]')).to_contain_text("Your answer: 2 — Right")
    class_page.get_by_role("button", name="Second round").click()  # a new question: both pages redrawn in place
    for page in (ada, grace):
        expect(class_box(page).locator('[data-role="class-ask-legend"]')).to_have_text(
            f"Your class is asked again (second round): {LEGEND}")
        expect(class_box(page).locator('[data-role="class-ask-mine"]')).to_have_count(0)
    vote(grace, 3)
    expect(class_box(ada).locator('[data-role="class-ask-mine"]')).to_have_count(0)  # Grace's vote is hers
    assert ada.evaluate("window.stayed === true") and grace.evaluate("window.stayed === true")


# -- item 11: online counts a dead site left behind lapse; Stuck from this class ------------------


def test_a_page_a_killed_site_left_open_shows_offline_on_the_class_page_within_its_ttl(
        contexts: Callable[..., BrowserContext], site: Site) -> None:
    class_page = signed_in_instructor(contexts())
    code = open_room(class_page, "Lapse e2e")
    # a second site on the same Valkey and secret, its pages' entries counting 3 s at a time
    env = {"EMQLAB_DATA_DIR": str(site.data_dir), "EMQLAB_PRESENCE_TTL": "3", "EMQLAB_STREAM_PING": "1"}
    with class_site(site.valkey.url, env) as doomed:
        ada = on_dive(contexts(base_url=doomed.url), code, "Ada")
        expect(row(class_page, "Ada").locator('[data-role="online"]')).to_have_text("online")
        expect(row(class_page, "Ada").locator('[data-role="page"]')).to_have_text(DIVE)
        assert doomed.proc is not None
        doomed.proc.send_signal(signal.SIGKILL)  # no goodbye from Ada's stream
        doomed.proc.wait(timeout=10)
        # her page is still open in the browser; the class page, on the live site, stops counting it
        expect(row(class_page, "Ada").locator('[data-role="online"]')).to_have_text("offline")
        expect(row(class_page, "Ada").locator('[data-role="page"]')).to_have_text("—")
        assert not ada.is_closed()


def test_a_learner_idle_before_joining_is_not_stuck_the_moment_they_join(
        contexts: Callable[..., BrowserContext], site: Site) -> None:
    grace_ctx = contexts()
    alone = grace_ctx.new_page()
    alone.goto(DIVE)
    expect(counter(alone)).to_have_text(re.compile(r"^\d$"))
    fanin(alone).locator('button[data-action="reset"]').click()
    expect(fanin(alone).locator('[data-role="outcome"]')).to_have_attribute("data-outcome-of", "reset")
    sandbox = site.sandbox_of(grace_ctx)
    with site.redis() as valkey:  # her last action was 8 minutes ago, on her own
        seen = int(valkey.hget(f"lab:{{{sandbox}}}:meta", "seen") or 0)
        assert seen > 0
        valkey.hset(f"lab:{{{sandbox}}}:meta", "seen", seen - 480_000)
    class_page = signed_in_instructor(contexts())
    code = open_room(class_page, "Stuck e2e")
    on_dive(grace_ctx, code, "Grace")
    grace = row(class_page, "Grace")
    expect(grace.locator('[data-role="online"]')).to_have_text("online")
    expect(grace.locator('[data-role="stuck"]')).to_have_text("—")
    class_page.reload()  # the server's own drawing says the same
    expect(row(class_page, "Grace").locator('[data-role="stuck"]')).to_have_text("—")


# -- item 12: no false sentence ----------------------------------------------------------------


def test_the_instructor_page_names_the_class_they_are_in_only_while_it_is_open(
        contexts: Callable[..., BrowserContext]) -> None:
    teacher = contexts()
    class_page = signed_in_instructor(teacher)
    code = open_room(class_page, "Closing e2e")
    home = teacher.new_page()
    home.goto("/instructor")
    expect(home.locator('[data-role="my-room"]')).to_have_text(code)
    class_page.get_by_role("button", name="Close the class").click()
    expect(class_page.locator('[data-role="flash"]')).to_contain_text("results stay downloadable")
    home.goto("/instructor")
    expect(home.locator("main")).not_to_contain_text("You are in class")
    expect(home.locator('[data-role="my-room"]')).to_have_count(0)
    expect(home.locator("main")).to_contain_text(code)  # its results are still listed


def test_in_a_demo_the_disabled_question_says_who_presses_not_answer_then_press(
        contexts: Callable[..., BrowserContext]) -> None:
    teacher = contexts()
    class_page = signed_in_instructor(teacher)
    code = open_room(class_page, "Hint e2e")
    ada = on_dive(contexts(), code, "Ada")
    hint = question(ada).locator(".predict-hint")
    expect(hint).to_contain_text("answer, then press Complete child")  # her own sandbox: she presses
    drive = teacher.new_page()
    drive.goto(DIVE)
    expect(counter(drive)).to_have_text(re.compile(r"^\d$"))
    class_page.get_by_role("button", name="Start demo").click()
    expect(fanin(ada).get_by_role("button", name="Complete child", exact=True)).to_be_disabled()
    expect(hint).to_have_text("Read-only in a demo: your instructor presses. When the class is asked, "
                              "answer in the class's question box.")
    expect(fanin(ada).locator('[data-role="predict"]')).not_to_contain_text("answer, then press")
    class_page.get_by_role("button", name="Stop demo").click()
    expect(hint).to_contain_text("answer, then press Complete child")


def test_a_browser_whose_class_cannot_be_checked_is_not_told_about_your_class(
        contexts: Callable[..., BrowserContext]) -> None:
    """Valkey away: the site cannot tell whether the class this browser joined is still open,
    so the words name "the class this browser joined", never "your class"."""
    with ValkeyProcess() as valkey, class_site(valkey.url, {"EMQLAB_STREAM_PING": "1"}) as own:
        ctx = contexts(base_url=own.url)
        class_page = signed_in_instructor(contexts(base_url=own.url))
        code = open_room(class_page, "Away e2e")
        ada = on_dive(ctx, code, "Ada")
        class_page.get_by_role("button", name="Close the class").click()  # she is in no class now
        expect(ada.locator('[data-role="room-banner"]')).to_contain_text("The class was closed")
        valkey.stop(remove_dir=False)
        with ada.expect_response(re.compile(r"/api/widgets/fanin/complete-child$")) as sent:
            fanin(ada).get_by_role("button", name="Complete child", exact=True).click()
        said = sent.value.json()["error"]
        assert sent.value.status == 503, said
        assert "your class" not in said and "the class this browser joined (it may have closed)" in said
        expect(fanin(ada).locator('[data-role="announce"]')).to_contain_text("the class this browser joined")
        # the status line says the server's words (the action's answer, the stream's status alike)
        expect(fanin(ada).locator('[data-role="status"]')).to_contain_text("Valkey is unreachable right now")


def test_a_vote_refused_twice_on_a_stale_page_says_why_once(contexts: Callable[..., BrowserContext]) -> None:
    teacher = contexts()
    class_page = signed_in_instructor(teacher)
    code = open_room(class_page, "Stale vote e2e")
    ada = join_room(contexts(), code, "Ada")
    ada.route("**/api/stream**", lambda route: route.abort())  # a page whose stream never reaches it: stale
    demo_asks_fanin_step_0(teacher, class_page)
    ada.goto(DIVE)
    box = class_box(ada)
    expect(box.locator('[data-role="class-ask-legend"]')).to_have_text(f"Your class is asked: {LEGEND}")
    class_page.get_by_role("button", name="End the question").click()
    expect(class_page.locator('[data-role="flash"]')).to_be_visible()
    box.locator('input[name="answer"]').fill("2")
    for _ in range(2):
        box.get_by_role("button", name="Send my answer").click()
        expect(box.locator('[data-role="class-ask-error"]')).to_have_text("your class is asked no question now")
    expect(box.locator('[data-role="class-ask-error"]')).to_have_count(1)
