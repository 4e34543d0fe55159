"""The specimen: a first visit (no cookie) registers no sandbox, yet its page shows every
widget landed, read from Valkey at that moment from the site's own read-only sandbox.

A flood of cookieless visits writes nothing beyond the specimen; the specimen lands again
when its keys are gone; no learner's console or Valkey ACL user reaches its keys; and each
widget's opening scenario is the one a visitor's own sandbox lands (so the stream's first
frame, which replaces it, moves nothing).
"""

from __future__ import annotations

import asyncio
import html
import http.cookiejar
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis

from server.console import as_user as acl
from server.content import load_course
from server.sandboxes import admission
from server.sandboxes.keys import REGISTRY_KEY
from server.sandboxes.sandbox import SPECIMEN
from server.valkey.process import ValkeyProcess
from server.widgets import WIDGETS
from tests.support import DIVE, LIMITS, ROOT, LiveSite, dumped, running, sandbox_of

SECRET = "specimen-tests-secret-" * 2
THE_COURSE = load_course(ROOT / "site" / "content", known_widgets=None)
# each dive that places a widget -> the widgets it places, in page order
DIVES: dict[str, list[str]] = {}
for _page, _placed in THE_COURSE.placements():
    if _placed.name in WIDGETS:
        DIVES.setdefault(_page.path, []).append(_placed.name)
SPECIMEN_KEYS = (f"emq:{{{SPECIMEN}.", f"lab:{{{SPECIMEN}.")


@pytest.fixture(scope="module")
def site() -> Iterator[LiveSite]:
    with ValkeyProcess() as valkey, running(valkey.url, {"EMQLAB_SECRET": SECRET}) as live:
        yield live


@pytest.fixture
def fresh(site: LiveSite) -> LiveSite:
    site.redis().flushdb()  # the cookie secret lives in the data directory, not in Valkey
    return site


def cookieless(site: LiveSite) -> httpx.Client:
    """A client that keeps no cookie a page sets: every visit is a first visit (a crawler, a flood)."""
    keep_none = http.cookiejar.CookieJar(policy=http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))
    return site.client(cookies=keep_none)


def sections(page: str) -> dict[str, str]:
    """Each widget's `<section>` on a page, by name."""
    return {m.group(1): m.group(0)
            for m in re.finditer(r'<section [^>]*data-widget="([^"]+)".*?</section>', page, re.S)}


def ver(section: str) -> int | None:
    found = re.search(r'data-ver="(\d+)"', section.split(">", 1)[0])
    return int(found.group(1)) if found else None


def readout(section: str) -> str:
    found = re.search(r'data-role="readout">([^<]*)<', section)
    assert found, section[:300]
    return html.unescape(found.group(1))


def everything(r: redis.Redis) -> dict[str, Any]:
    return dumped(r)


def users(r: redis.Redis) -> set[str]:
    return {str(u) for u in r.execute_command("ACL", "USERS")}


def comparable(section: str) -> str:
    """A widget's drawing with what differs between two sandboxes of the same scenario taken out:
    its `ver`, its queues' hash slots (a queue's slot is its sandbox's), a lease's deadline (a
    score in ms). The race's recorded run is no exception: its workers take turns in the seed's time."""
    section = re.sub(r'data-ver="\d+"', 'data-ver=""', section)
    section = re.sub(r"slot \d+", "slot N", section)
    return re.sub(r"\(score \d{13}\)", "(score T)", section)


@pytest.mark.parametrize("dive", list(DIVES))
def test_a_cookieless_visit_registers_no_sandbox_and_shows_every_widget_landed_from_the_specimen(
        fresh: LiveSite, dive: str) -> None:
    r = fresh.redis()
    before = users(r)
    with cookieless(fresh) as client:
        answer = client.get(dive)
    assert answer.status_code == 200
    assert r.zcard(REGISTRY_KEY) == 0 and r.zcard(admission.HELD_KEY) == 0  # nothing registered or held
    assert users(r) == before  # no ACL user made
    assert not [k for k in r.scan_iter("*") if k.startswith(("emq:{s", "lab:{s")) and not k.startswith(SPECIMEN_KEYS)]
    drawn = sections(answer.text)
    assert list(drawn) == DIVES[dive]
    for name, section in drawn.items():
        assert ver(section) == 0, name  # no sandbox's state: the stream's first frame replaces it
        assert readout(section) and not readout(section).startswith("Reading the keys"), name
        assert "reload this page" not in section
        # the figures are Valkey's: the specimen's lab state is there, landed
        assert r.hget(f"lab:{{{SPECIMEN}.{WIDGETS[name].queue_parts[0]}}}:state", "landed") == "1", name
    if "fanin" in drawn:
        assert re.search(r'data-role="dependencies">3<', drawn["fanin"])


@pytest.mark.parametrize("dive", list(DIVES))
def test_the_specimen_draws_the_opening_scenario_a_visitors_own_sandbox_lands(site: LiveSite, dive: str) -> None:
    """The same rows, sets, readout and picture: only the `ver`, the slots and a lease's deadline
    differ, so the frame that replaces the specimen moves nothing."""
    with site.client() as client:
        first = sections(client.get(dive).text)  # no cookie yet: the specimen
        own = sections(client.get(dive).text)  # the cookie kept: the visitor's own sandbox, landed now
    for name in DIVES[dive]:
        assert ver(first[name]) == 0 and (ver(own[name]) or 0) > 0, name
        assert comparable(first[name]) == comparable(own[name]), name


def test_a_flood_of_cookieless_page_visits_writes_nothing_beyond_the_specimen(fresh: LiveSite) -> None:
    r = fresh.redis()
    acl_users = users(r)
    with cookieless(fresh) as client:
        for dive in DIVES:
            assert client.get(dive).status_code == 200
    landed = everything(r)
    assert landed and all(key.startswith(SPECIMEN_KEYS) for key in landed), sorted(landed)

    async def flood() -> list[int]:
        keep_none = http.cookiejar.CookieJar(policy=http.cookiejar.DefaultCookiePolicy(allowed_domains=[]))
        limit = asyncio.Semaphore(16)
        async with httpx.AsyncClient(base_url=fresh.url, timeout=30, cookies=keep_none,
                                     limits=LIMITS) as client:
            async def one(path: str) -> int:
                async with limit:
                    return (await client.get(path)).status_code
            return await asyncio.gather(*(one(dive) for _ in range(10) for dive in DIVES))

    assert set(asyncio.run(flood())) == {200}
    assert everything(r) == landed  # byte for byte: read, never written again
    assert r.zcard(REGISTRY_KEY) == 0 and users(r) == acl_users


def test_the_specimen_lands_again_after_its_keys_are_deleted(fresh: LiveSite) -> None:
    r = fresh.redis()
    with cookieless(fresh) as client:
        assert re.search(r'data-role="dependencies">3<', sections(client.get(DIVE).text)["fanin"])
        gone = [k for k in r.scan_iter("*") if k.startswith(SPECIMEN_KEYS)]
        assert gone
        r.delete(*gone)  # FLUSHALL, or a Valkey restarted without its data
        again = sections(client.get(DIVE).text)
    assert re.search(r'data-role="dependencies">3<', again["fanin"]) and ver(again["fanin"]) == 0
    assert r.hget(f"lab:{{{SPECIMEN}.fanin}}:state", "landed") == "1"
    assert r.zcard(REGISTRY_KEY) == 0


def test_a_learners_console_and_valkey_acl_user_reach_no_key_of_the_specimen(fresh: LiveSite) -> None:
    r = fresh.redis()
    with cookieless(fresh) as client:
        client.get(DIVE)
    row = f"emq:{{{SPECIMEN}.fanin}}:job:{WIDGETS['fanin'].job_ids('fanin')[0]}"
    assert r.type(row) == "hash"
    kept = {k: r.dump(k) for k in r.scan_iter("*") if k.startswith(SPECIMEN_KEYS)}
    learner = fresh.visitor()
    origin = {"Origin": fresh.url}
    for line in (f"HGETALL {row}", f"HSET {row} state dead", f"DEL {row}", f"EXISTS {row}"):
        answer = learner.post("/api/console", json={"command": line}, headers=origin)
        assert answer.status_code < 500, answer.text
        # the console names the learner's own queues only: `{specimen.fanin}` would be one of theirs
        assert "awaiting_children" not in answer.text, answer.text
    user = acl.user_of(sandbox_of(learner))
    assert user in users(r) and acl.user_of(SPECIMEN) not in users(r)
    as_learner = redis.Redis.from_url(fresh.valkey_url, username=user, password=acl.password_of(SECRET, user),
                                      decode_responses=True)
    try:
        for attempt in (lambda: as_learner.hgetall(row), lambda: as_learner.hset(row, "state", "dead"),
                        lambda: as_learner.delete(row)):
            with pytest.raises(redis.exceptions.NoPermissionError):
                attempt()
    finally:
        as_learner.close()
    assert {k: r.dump(k) for k in r.scan_iter("*") if k.startswith(SPECIMEN_KEYS)} == kept
