"""The classroom-address test: a class behind one address (a school's network)
is not locked out by one guesser among it. Failed room joins and failed
sign-ins are counted per visitor and per address, each kind apart (DESIGN.md
"Trust boundaries"), before anything is compared: every right join and the
instructor's right token go through, and guessing stays bounded, by cookie
and, with fresh cookies or none, by address. Real site, real Valkey."""

from __future__ import annotations

import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor

import httpx
import pytest

from server.valkey.process import ValkeyProcess
from tests.e2e.rooms import class_site, open_class
from tests.support import INSTRUCTOR_TOKEN, LiveSite

LEARNERS = 30


def fresh_minute(margin: float = 20) -> None:
    """Failed attempts are counted per wall-clock minute: a test must not straddle two."""
    left = 60 - time.time() % 60
    if left < margin:
        time.sleep(left + 0.1)


def wrong_codes(n: int) -> Iterator[str]:
    """Well-formed codes (no 0/O/1/I) no class has."""
    alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
    for i in range(n):
        yield "ZZ" + alphabet[i // len(alphabet) % len(alphabet)] + alphabet[i % len(alphabet)] + "Z9"


def join(client: httpx.Client, code: str, name: str) -> int:
    return client.post("/room/join", json={"code": code, "name": name}).status_code


def sign_in(client: httpx.Client, token: str) -> httpx.Response:
    return client.post("/instructor/sign-in", json={"token": token})


@pytest.fixture
def valkey() -> Iterator[ValkeyProcess]:
    """A Valkey of the test's own: the attempts counted here must not reach another test's minute."""
    with ValkeyProcess(home=None) as server:
        yield server


@pytest.fixture
def classroom(valkey: ValkeyProcess) -> Iterator[LiveSite]:
    # the site's defaults for attempts (LiveSite turns them off for other tests)
    with class_site(valkey.url, {"EMQLAB_ATTEMPT_LIMIT": "20"},
                    without=("EMQLAB_ADDRESS_ATTEMPT_LIMIT",)) as site:
        yield site


def test_thirty_learners_behind_one_address_all_join_while_one_types_21_wrong_codes_and_the_instructor_signs_in(
        classroom: LiveSite) -> None:
    fresh_minute()
    _, code = open_class(classroom)
    learners = [classroom.visitor() for _ in range(LEARNERS)]  # every one from 127.0.0.1
    guesser, others = learners[0], learners[1:]
    assert join(guesser, code, "Learner 0") == 200  # they joined, then try codes of other classes

    def guess(wrong: str) -> int:
        return join(guesser, wrong, "Learner 0")

    with ThreadPoolExecutor(8) as pool:  # the guessing and the class's joins at the same time
        guessed = pool.map(guess, wrong_codes(21))
        joined = pool.map(lambda n: join(others[n - 1], code, f"Learner {n}"), range(1, LEARNERS))
        guesses, joins = sorted(guessed), list(joined)
    assert joins == [200] * (LEARNERS - 1)
    assert guesses == [404] * 20 + [429]  # 20 compared, the 21st refused before any lookup
    r = classroom.redis()
    assert r.zcard(f"lab:room:{code}:learners") == LEARNERS

    # the guesser stays bounded: past its limit even the right code is not looked up
    refused = guesser.post("/room/join", json={"code": code, "name": "Learner 0"})
    assert refused.status_code == 429 and "from one visitor" in refused.json()["error"]
    # wrong tokens are counted apart from wrong codes: 20 compared, then refused
    tokens = [sign_in(guesser, f"guess-{n:02d}-of-sixteen").status_code for n in range(21)]
    assert tokens == [401] * 20 + [429]
    assert sign_in(guesser, INSTRUCTOR_TOKEN).status_code == 429  # not compared: a guess cannot learn it
    # the instructor's right token, from a fresh browser on the same address, signs in
    teacher = classroom.visitor("/")
    assert sign_in(teacher, INSTRUCTOR_TOKEN).status_code == 200
    assert len(teacher.get(f"/instructor/rooms/{code}/roster.json").json()["learners"]) == LEARNERS
    # and a latecomer of the class still joins
    assert join(classroom.visitor(), code, "Latecomer") == 200


def test_fresh_cookies_or_none_buy_no_more_guesses_than_the_address_allows(valkey: ValkeyProcess) -> None:
    env = {"EMQLAB_ATTEMPT_LIMIT": "5", "EMQLAB_ADDRESS_ATTEMPT_LIMIT": "30"}
    with class_site(valkey.url, env) as site:
        fresh_minute()
        _, code = open_class(site)
        codes = wrong_codes(200)
        # a guesser dropping its cookie: every cookieless caller of the address is one visitor
        bare = site.client()
        cookieless = [sign_in(bare, f"guess-{n:02d}-of-sixteen").status_code for n in range(8)]
        assert cookieless == [401] * 5 + [429] * 3
        # a guesser taking a fresh cookie for every 5 guesses: the address's 30 bound them all
        statuses: list[int] = []
        for _ in range(12):
            fresh = site.visitor()
            statuses += [join(fresh, next(codes), "Guesser") for _ in range(5)]
        assert statuses.count(404) == 30 and statuses.count(429) == 30
        last = site.visitor().post("/room/join", json={"code": next(codes), "name": "Guesser"})
        assert last.status_code == 429 and "from your address" in last.json()["error"]
        # the sign-ins' count is apart: the instructor's right token still signs in here
        assert sign_in(site.visitor("/"), INSTRUCTOR_TOKEN).status_code == 200
        # and another address is not touched at all
        elsewhere = site.client_from("127.0.0.2")
        assert elsewhere.get("/flows/parent-and-children").status_code == 200
        assert join(elsewhere, code, "Ada") == 200
