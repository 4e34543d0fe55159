"""A roster that tells the truth, and notices that stay, in Chromium: the
instructor and learners each in a browser context of their own."""

from __future__ import annotations

import csv
import io
import time
from collections.abc import Callable

import httpx
from playwright.sync_api import BrowserContext, Locator, Page, Request, Route, expect

from tests.e2e.conftest import Site
from tests.e2e.rooms import DIVE, counter, fanin, join_room, open_room, signed_in_instructor


def row(class_page: Page, name: str) -> Locator:
    return class_page.locator("tr[data-learner]", has=class_page.locator('[data-role="name"]', has_text=name))


def complete(page: Page) -> Locator:
    return fanin(page).get_by_role("button", name="Complete child", exact=True)


def on_dive(ctx: BrowserContext, code: str, name: str) -> Page:
    page = join_room(ctx, code, name)
    page.goto(DIVE)
    expect(counter(page)).to_have_text("3")
    return page


def test_the_roster_shows_the_widget_acted_on_the_page_open_and_results_csv_the_same_numbers(
    contexts: Callable[..., BrowserContext],
) -> None:
    instructor_ctx = contexts()
    class_page = signed_in_instructor(instructor_ctx)
    code = open_room(class_page, "Roster e2e")
    ada, grace = on_dive(contexts(), code, "Ada"), on_dive(contexts(), code, "Grace")
    complete(ada).click()
    expect(counter(ada)).to_have_text("2")
    ada.reload()  # every widget of the dive loads again (the console too): the one she acted on stays
    expect(counter(ada)).to_have_text("2")
    ada_row, grace_row = row(class_page, "Ada"), row(class_page, "Grace")
    expect(ada_row.locator('[data-role="page"]')).to_have_text(DIVE)
    expect(ada_row.locator('[data-role="widget"]')).to_have_text("fanin")
    expect(ada_row.locator('[data-role="progress"]')).to_have_text("fanin 1 of 8 steps")
    expect(ada_row.locator('[data-role="online"]')).to_have_text("online")
    expect(grace_row.locator('[data-role="page"]')).to_have_text(DIVE)
    expect(grace_row.locator('[data-role="widget"]')).to_have_text("—")  # she loaded it, never acted
    expect(grace_row.locator('[data-role="progress"]')).to_have_text("not started")
    grace.close()
    expect(grace_row.locator('[data-role="page"]')).to_have_text("—")
    expect(grace_row.locator('[data-role="online"]')).to_have_text("offline")

    answer = instructor_ctx.request.get(f"/instructor/rooms/{code}/results.csv")
    assert answer.status == 200
    table = {r["name"]: r for r in csv.DictReader(io.StringIO(answer.text()))}
    assert list(table) == ["Ada", "Grace"]
    assert (table["Ada"]["fanin steps"], table["Grace"]["fanin steps"]) == ("1", "0")
    assert table["Ada"]["pages"] == DIVE and table["Ada"]["last seen"]


def test_working_together_each_learner_is_credited_with_their_own_action_and_named_on_the_other_pages(
    contexts: Callable[..., BrowserContext],
) -> None:
    class_page = signed_in_instructor(contexts())
    code = open_room(class_page, "Together e2e")
    ada, grace = on_dive(contexts(), code, "Ada"), on_dive(contexts(), code, "Grace")
    class_page.get_by_role("button", name="Work together").click()
    expect(ada.locator('[data-role="room-banner"]')).to_contain_text("working together")
    expect(grace.locator('[data-role="room-banner"]')).to_contain_text("working together")
    complete(ada).click()
    expect(counter(grace)).to_have_text("2")  # one shared sandbox, live on both pages
    expect(fanin(grace).locator('[data-role="outcome"]')).to_contain_text("Ada: Completed JOBchild1")
    complete(grace).click()
    expect(counter(ada)).to_have_text("1")
    expect(fanin(ada).locator('[data-role="outcome"]')).to_contain_text("Grace: Completed JOBchild2")
    for name in ("Ada", "Grace"):
        expect(row(class_page, name).locator('[data-role="progress"]')).to_have_text("fanin 1 of 8 steps")
        expect(row(class_page, name).locator('[data-role="widget"]')).to_have_text("fanin")


def test_the_reset_notice_is_seen_by_a_learner_who_keeps_clicking_and_stays_for_one_who_does_not(
    contexts: Callable[..., BrowserContext],
) -> None:
    class_page = signed_in_instructor(contexts())
    code = open_room(class_page, "Notice e2e")
    busy, idle = on_dive(contexts(), code, "Busy"), on_dive(contexts(), code, "Idle")
    complete(idle).click()
    expect(counter(idle)).to_have_text("2")
    # Busy clicks Claim every 250 ms (a click's answer never clears a notice that came after it left)
    busy.evaluate("""() => { const b = [...document.querySelectorAll('[data-widget="fanin"] button')]
        .find((x) => x.textContent.trim() === 'Claim'); window.clicking = setInterval(() => b.click(), 250); }""")
    expect(fanin(busy).locator('[data-role="outcome"]')).to_contain_text("Claim")
    class_page.get_by_role("button", name="Reset every learner").click()
    class_page.locator('[data-role="confirm"]').get_by_role("button", name="Yes, reset 2 learners").click()
    expect(class_page.locator('[data-role="flash"]')).to_contain_text("2 learners")
    notice = "Your sandbox was reset by the instructor"
    expect(fanin(busy).locator('[data-role="status"]')).to_contain_text(notice)
    busy.wait_for_timeout(1000)  # four more clicks answered
    expect(fanin(busy).locator('[data-role="status"]')).to_contain_text(notice)
    busy.evaluate("clearInterval(window.clicking)")
    status = fanin(idle).locator('[data-role="status"]')
    expect(counter(idle)).to_have_text("3")
    expect(status).to_contain_text(notice)
    idle.wait_for_timeout(5000)  # no timer takes it away
    expect(status).to_contain_text(notice)
    status.get_by_role("button", name="Dismiss this notice").click()
    expect(status).to_have_text("")


def learner_joins(site: Site, code: str, name: str) -> httpx.Client:
    client = httpx.Client(base_url=site.url, timeout=10)
    assert client.get(DIVE).status_code == 200
    assert client.post("/room/join", json={"code": code, "name": name}).status_code == 200
    return client


def class_page_fetches(class_page: Page) -> list[str]:
    """Every time the class page's script fetches the page again (its live redraw)."""
    fetched: list[str] = []

    def seen(request: Request) -> None:
        if request.resource_type == "fetch" and request.url.rstrip("/") == class_page.url.rstrip("/"):
            fetched.append(request.url)

    class_page.on("request", seen)
    return fetched


def test_an_idle_class_page_ticks_its_learners_ages_without_fetching_itself(
    contexts: Callable[..., BrowserContext], site: Site,
) -> None:
    class_page = signed_in_instructor(contexts())
    code = open_room(class_page, "Idle e2e")
    ada = learner_joins(site, code, "Ada")
    assert ada.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
    ada_row = row(class_page, "Ada")
    expect(ada_row.locator('[data-role="widget"]')).to_have_text("fanin")
    # settled: the page draws what the stream last said (a fetch for Ada's action may still be on its way)
    expect(class_page.locator("[data-class]")).to_have_attribute(
        "data-drawn", class_page.locator("[data-class]").get_attribute("data-latest") or "")
    fetched = class_page_fetches(class_page)
    age = ada_row.locator('[data-role="seen"]')
    was = age.inner_text()
    expect(age).not_to_have_text(was)  # "N s ago" ticks, from the stream's words
    time.sleep(3)
    assert fetched == []  # the ages alone never make the page fetch its HTML again
    grace = learner_joins(site, code, "Grace")  # the class changes: the page is drawn afresh
    expect(row(class_page, "Grace")).to_have_count(1)
    assert fetched
    grace.close()
    ada.close()


def test_a_class_page_whose_fetch_caught_a_passing_state_fetches_again_until_it_draws_the_class_now(
    contexts: Callable[..., BrowserContext], site: Site,
) -> None:
    # a learner's reload passes through "no page open": a fetch served in that moment draws an older
    # class than the stream said, and the page must not keep it (it once kept "—" until another change)
    instructor = contexts()
    class_page = signed_in_instructor(instructor)
    code = open_room(class_page, "Passing e2e")
    before = instructor.request.get(f"/instructor/rooms/{code}").text()  # nobody joined yet
    assert 'data-drawn="' in before
    fetched = class_page_fetches(class_page)
    served_before: list[bool] = []

    def once_older(route: Route) -> None:
        if route.request.resource_type == "fetch" and not served_before:
            served_before.append(True)
            route.fulfill(status=200, content_type="text/html", body=before)
        else:
            route.continue_()

    class_page.route(f"**/instructor/rooms/{code}", once_older)
    ada = learner_joins(site, code, "Ada")
    expect(row(class_page, "Ada")).to_have_count(1)
    assert served_before and len(fetched) >= 2  # the older drawing was served, then the page fetched again
    ada.close()


def test_a_class_page_whose_own_fetches_are_slow_still_draws_every_learner_who_joins(
    contexts: Callable[..., BrowserContext], site: Site,
) -> None:
    class_page = signed_in_instructor(contexts())
    code = open_room(class_page, "Slow e2e")

    def slowly(route: Route) -> None:
        if route.request.resource_type == "fetch":
            time.sleep(1.3)  # slower than the stream's changes come: a newer one always waits
        route.continue_()

    class_page.route(f"**/instructor/rooms/{code}", slowly)
    learners = [learner_joins(site, code, "Ada")]
    assert learners[0].post("/api/widgets/fanin/complete-child", json={}).status_code == 200  # her age ticks
    time.sleep(2)
    learners += [learner_joins(site, code, name) for name in ("Grace", "Linus", "Mary")]
    for name in ("Ada", "Grace", "Linus", "Mary"):
        expect(row(class_page, name)).to_have_count(1, timeout=20_000)
    expect(class_page.locator('[data-role="roster-status"]')).to_have_text("4 learners joined.")
    for learner in learners:
        learner.close()
