"""What the class tests do: the site they run against, the instructor signing
in and opening a room, a learner joining it, and the fan-in widget's parts
they look at (each person in a browser context of their own: the `contexts`
fixture, tests/e2e/conftest.py). The integration tests of classes use the
site and the HTTP helpers here too.

The site is the real one under uvicorn (`ClassSite`, a `LiveSite`), built
by `app_with_fanin_question`: the app `emqlab serve` builds, and, while the
dive does not declare it yet (its Markdown's `questions:` body is another
change's), the fan-in's question before "Complete child" bound onto the
app's catalog in the site's own process, exactly as the dive will declare it.
Once the dive declares a question for that button, nothing is added.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from playwright.sync_api import BrowserContext, Locator, Page, expect

from bench import uvicorn_workers
from server.valkey.process import ValkeyProcess
from tests.e2e.pages import WIDGETS, region
from tests.support import INSTRUCTOR_TOKEN, LiveSite, Site

DIVE = WIDGETS["fanin"][0]  # the fan-in's dive
FANIN_QUESTION: dict[str, Any] = {  # as site/content/flows/parent-and-children.md declares it
    "id": "deps-after-complete",
    "action": "complete-child",
    "legend": "Predict: what will :dependencies be after this completion?",
    "reading": "dependencies",
    "when": "children-outstanding",
    "answer": "number",
    "says": ":dependencies = {value}",
    "feedback": [{"answer": "before", "text": "That is the count before this completion. The child leaves "
                  "active in this very call, so the fan-in takes one off the counter."}],
}
LEGEND = FANIN_QUESTION["legend"]


def app_with_fanin_question() -> Any:
    """uvicorn factory: the site's app, its fan-in asking before "Complete child"."""
    from server.cli import app_from_env
    from server.widgets import questions

    app = app_from_env()
    catalog = app.state.catalog
    fanin = catalog.widgets["fanin"]
    if not any(q.action == "complete-child" for q in catalog.asked(fanin)):
        bound = questions.bind(fanin, FANIN_QUESTION, "tests/e2e/rooms.py")
        catalog.questions["fanin"] = (*catalog.asked(fanin), bound)
    return app


class ClassSite(LiveSite):
    """The live site, served by `app_with_fanin_question`."""

    def start(self, timeout: float = 30.0, output: Any = None) -> ClassSite:
        self.proc = subprocess.Popen(
            uvicorn_workers.command("tests.e2e.rooms:app_with_fanin_question", self.port),
            env=self.env, cwd=str(self.env["PYTHONPATH"]), stdout=output, stderr=output)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"the site exited early with {self.proc.returncode}")
            try:
                if httpx.get(self.url + "/", timeout=1).status_code == 200:
                    return self
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the site did not answer within {timeout} s")


@contextmanager
def class_site(valkey_url: str, env: dict[str, str] | None = None,
               without: tuple[str, ...] = ()) -> Iterator[ClassSite]:
    """The site on `valkey_url`, with `env` set and the variables `without` unset."""
    live = ClassSite(valkey_url, env)
    for name in without:
        live.env.pop(name, None)
    live.start()
    try:
        yield live
    finally:
        live.stop()


@contextmanager
def own_class_site(env: dict[str, str] | None = None) -> Iterator[Site]:
    """A Valkey of its own and the class site on it (the e2e modules' `site`)."""
    with ValkeyProcess() as valkey, class_site(valkey.url, env) as live:
        assert live.proc is not None
        yield Site(live.url, valkey, live.proc)


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
    """The fan-in's Predict fieldset (its legend starts with "Predict")."""
    return fanin(page).locator("fieldset").filter(has=page.locator("legend", has_text=re.compile(r"^Predict")))


def answer_and_complete(page: Page, value: int) -> None:
    question(page).locator('input[type="number"]').fill(str(value))
    fanin(page).get_by_role("button", name="Complete child", exact=True).click()
    expect(fanin(page).locator('[data-role="outcome"] .verdict')).to_be_visible()
