"""What the class tests do: the site they run against, the instructor signing
in and opening a room, a learner joining it, and the fan-in widget's parts
they look at (each person in a browser context of their own: the `contexts`
fixture, tests/e2e/conftest.py). The integration tests of classes use the
site and the HTTP helpers here too.

The fan-in's question is the one its dive declares
(site/content/flows/parent-and-children.md), quoted here as the tests read it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from playwright.sync_api import BrowserContext, Locator, Page, expect

from tests.e2e.pages import WIDGETS, region, wait_until_live
from tests.support import INSTRUCTOR_TOKEN, LiveSite

DIVE = WIDGETS["fanin"][0]  # the fan-in's dive
FANIN_QUESTION: dict[str, Any] = {  # as the dive declares it
    "id": "deps-after-complete",
    "legend": "Predict: what will :dependencies be after this completion?",
    "feedback": "That is the count before this completion. The child leaves active in this very call, "
                "so the fan-in takes one off the counter.",
}
LEGEND = FANIN_QUESTION["legend"]


@contextmanager
def class_site(valkey_url: str, env: dict[str, str] | None = None,
               without: tuple[str, ...] = ()) -> Iterator[LiveSite]:
    """The real site on `valkey_url`, with `env` set and the variables `without` unset."""
    live = LiveSite(valkey_url, env)
    for name in without:
        live.env.pop(name, None)
    live.start()
    try:
        yield live
    finally:
        live.stop()


# -- HTTP: the instructor and learners as clients ------------------------------------


def open_class(site: LiveSite, name: str = "Tuesday") -> tuple[httpx.Client, str]:
    instructor = site.instructor()
    answer = instructor.post("/instructor/rooms", json={"name": name})
    assert answer.status_code == 201, answer.text
    return instructor, answer.json()["room"]["code"]


def joined(site: LiveSite, code: str, name: str) -> httpx.Client:
    client = site.visitor()
    answer = client.post("/room/join", json={"code": code, "name": name})
    assert answer.status_code == 200, answer.text
    return client


def own_sandbox(site: LiveSite, code: str, name: str) -> str:
    """A learner's own sandbox id, as the class records it (the cookie is signed)."""
    r = site.redis()
    for sandbox in r.zrange(f"lab:room:{code}:learners", 0, -1):
        if r.hget(f"lab:{{{sandbox}}}:meta", "name") == name:
            return str(sandbox)
    raise AssertionError(f"{name} is not in class {code}")


def predict(client: httpx.Client, answer: int | str) -> dict[str, Any]:
    """Answer the fan-in's open question and press Complete child, as the page does."""
    body = {"predict": {"question": FANIN_QUESTION["id"], "answer": answer}}
    reply = client.post("/api/widgets/fanin/complete-child", json=body)
    assert reply.status_code == 200, reply.text
    return dict(reply.json())


# -- Chromium ----------------------------------------------------------------------


def fanin(page: Page) -> Locator:
    return region(page, "fanin")


def counter(page: Page) -> Locator:
    return fanin(page).locator('[data-role="dependencies"]')


def fanin_reset(page: Page) -> Locator:
    """The dive opened live and its fan-in reset: three children, :dependencies = 3 as Valkey holds it."""
    page.goto(DIVE)
    wait_until_live(page)
    widget = fanin(page)
    widget.locator('button[data-action="reset"]').click()
    expect(counter(page)).to_have_text("3")
    return widget


def signed_in_instructor(ctx: BrowserContext) -> Page:
    page = ctx.new_page()
    answer = page.goto("/instructor")
    assert answer is not None and answer.status == 401
    page.get_by_label("Instructor token").fill(INSTRUCTOR_TOKEN)
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator('[data-role="flash"]')).to_have_text("Signed in as the instructor.")
    return page


def open_room(instructor: Page, name: str) -> str:
    """The room's code, opened from the instructor's page; the class page shows."""
    instructor.get_by_label("Room name").fill(name)
    instructor.get_by_role("button", name="Open a room").click()
    expect(instructor).to_have_url(re.compile(r"/instructor/rooms/[A-Z0-9]{6}$"))
    return instructor.locator('[data-role="room-code"]').inner_text()


def join_room(ctx: BrowserContext, code: str, name: str = "Learner") -> Page:
    page = ctx.new_page()
    page.goto("/room")
    page.get_by_label("Room code").fill(code.lower())
    page.get_by_label("Your name").fill(name)
    page.get_by_role("button", name="Join").click()
    expect(page.locator('[data-role="room-code"]')).to_have_text(code)
    return page


def question(page: Page) -> Locator:
    """The fan-in's Predict fieldset before "Complete child" (one per action may be open)."""
    return fanin(page).get_by_role("group", name=LEGEND)


def answer_and_complete(page: Page, value: int) -> None:
    question(page).locator('input[type="number"]').fill(str(value))
    fanin(page).get_by_role("button", name="Complete child", exact=True).click()
    expect(fanin(page).locator('[data-role="outcome"] .verdict')).to_be_visible()
