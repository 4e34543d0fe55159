"""The instructor's sign-in is a session kept in Valkey (real site, real
Valkey): sign-out ends it, so a copy of the cookie stops answering 200 at
once; the cookie's payload is a random id that reveals nothing about the
token; a new token ends every session."""

from __future__ import annotations

import hashlib

import httpx
from itsdangerous import URLSafeTimedSerializer

from server.valkey.process import ValkeyProcess
from tests.e2e.rooms import class_site
from tests.support import INSTRUCTOR_TOKEN, LiveSite

COOKIE = "emqlab_instructor"


def copy_of(site: LiveSite, signed_in: httpx.Client) -> httpx.Client:
    """Another client holding only a copy of the instructor's cookie (as a thief would)."""
    thief = site.client()
    thief.cookies.set(COOKIE, signed_in.cookies[COOKIE])
    return thief


def payload(client: httpx.Client) -> object:
    _, value = URLSafeTimedSerializer("").loads_unsafe(client.cookies[COOKIE])
    return value


def test_sign_out_ends_the_session_so_a_copied_cookie_answers_401_at_once(valkey_server: ValkeyProcess) -> None:
    with class_site(valkey_server.url, {"EMQLAB_INSTRUCTOR_SESSION": "600"}) as site:
        instructor = site.instructor()
        thief = copy_of(site, instructor)
        assert thief.get("/instructor/overview").status_code == 200
        sid = payload(instructor)
        r = site.redis()
        assert 0 < r.ttl(f"lab:instructor:{sid}") <= 600
        out = instructor.post("/instructor/sign-out", headers={"Accept": "application/json"})
        assert out.status_code == 200
        assert r.exists(f"lab:instructor:{sid}") == 0
        for path in ("/instructor/overview", "/instructor"):
            assert thief.get(path, headers={"Accept": "application/json"}).status_code == 401, path
        assert thief.post("/instructor/rooms", json={"name": "stolen"}).status_code == 401


def test_the_cookie_carries_a_random_session_id_that_reveals_nothing_about_the_token(
        valkey_server: ValkeyProcess) -> None:
    with class_site(valkey_server.url) as site:
        first, second = site.instructor(), site.instructor()
        ids = [payload(first), payload(second)]
        assert all(isinstance(sid, str) and len(sid) >= 32 for sid in ids) and ids[0] != ids[1]
        token = INSTRUCTOR_TOKEN.encode()
        guesses = {hashlib.sha256(token).hexdigest(), hashlib.sha256(b"emqlab-instructor:" + token).hexdigest()}
        for sid in ids:
            assert isinstance(sid, str) and INSTRUCTOR_TOKEN not in sid
            assert not any(sid in g or g[:32] in sid for g in guesses)
        # what Valkey holds is keyed by the site's secret: not the token's plain hash either
        held = {site.redis().get(f"lab:instructor:{sid}") for sid in ids}
        assert len(held) == 1 and not held & guesses


def test_a_new_instructor_token_ends_every_session(valkey_server: ValkeyProcess) -> None:
    same_secret = {"EMQLAB_SECRET": "one-secret-for-both-runs-of-the-site"}
    with class_site(valkey_server.url, same_secret) as site:
        instructor = site.instructor()
        kept = instructor.cookies[COOKIE]
    with class_site(valkey_server.url, {**same_secret, "EMQLAB_INSTRUCTOR_TOKEN": "a-brand-new-token-16+"}) as site:
        again = site.client()
        again.cookies.set(COOKIE, kept)
        assert again.get("/instructor/overview").status_code == 401
