"""Hostile requests against the real site: each is refused with a 4xx JSON
answer in words, and every key outside the caller's sandbox is byte for byte
what it was (DUMP of every key before and after); a refusal made before the
action runs leaves the whole keyspace as it was.

The keyspace holds, besides the caller's sandbox, another visitor's and a
class's shared one (together mode), each with its widgets landed and moved,
so there is something to damage.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis
from itsdangerous import URLSafeSerializer

from server.sandboxes.sandbox import COOKIE
from server.valkey.process import ValkeyProcess
from server.widgets import WIDGETS
from tests.integration import classes_direct
from tests.support import DIVE, SITE_CLOCK, LiveSite, dumped, running, sandbox_of

ACTIONS = [(name, slug) for name, widget in WIDGETS.items() for slug in sorted(widget.actions)]
EVIL_ORIGINS = ["https://evil.example", "null", "http://127.0.0.1:1", "http://127.0.0.1.evil.example"]
BAD_NAMES = ["JOB{x}", "JOB:x", "JOB*", "JOB\nx", "x}{y", "emq:{s}:pending", "", "J" * 129]


@pytest.fixture(scope="module")
def site() -> Iterator[LiveSite]:
    with ValkeyProcess() as valkey, running(valkey.url, {"EMQLAB_SECRET": classes_direct.SECRET}) as live:
        yield live


@pytest.fixture(scope="module")
def world(site: LiveSite) -> dict[str, Any]:
    """The caller, another visitor, and a class sharing one sandbox, each with every widget landed."""
    caller, other, member = site.visitor(), site.visitor(), site.visitor()
    code = classes_direct.enrol(site, [member], mode="together")
    for client in (caller, other, member):
        for name in WIDGETS:
            assert client.get(f"/api/widgets/{name}/state").status_code == 200
    for client in (other, member):
        assert client.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
    return {"caller": caller, "sandbox": sandbox_of(caller), "other": sandbox_of(other), "code": code}


@pytest.fixture
def raw(site: LiveSite) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(site.valkey_url)
    yield client
    client.close()


def dump_outside(r: redis.Redis, sandbox: str) -> dict[bytes, Any]:
    """DUMP of every key outside `sandbox`; the site's sandbox indexes without its entry."""
    mine = tuple(p.encode() for p in (f"emq:{{{sandbox}.", f"lab:{{{sandbox}", *SITE_CLOCK))
    found: dict[bytes, Any] = {}
    for key in r.scan_iter(count=1000):
        if key.startswith(mine):
            continue
        if r.type(key) == b"zset" and key.startswith((b"lab:sandboxes", b"{lab:sandboxes}")):
            entries: list[tuple[bytes, float]] = r.zrange(key, 0, -1, withscores=True)  # type: ignore[assignment]
            others = sorted((m, s) for m, s in entries if m != sandbox.encode())
            if others:  # a side set may exist only because of the caller's entry
                found[key] = others
        else:
            found[key] = r.dump(key)
    return found


class Unchanged:
    """Asserts the keyspace outside the caller's sandbox (and, with `whole`,
    the whole keyspace) is what it was."""

    def __init__(self, r: redis.Redis, sandbox: str, whole: bool = True) -> None:
        self.r, self.sandbox, self.whole = r, sandbox, whole

    def __enter__(self) -> Unchanged:
        self.outside = dump_outside(self.r, self.sandbox)
        self.everything = dumped(self.r) if self.whole else None
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None:
            return
        assert dump_outside(self.r, self.sandbox) == self.outside
        if self.everything is not None:
            assert dumped(self.r) == self.everything


def refused(answer: httpx.Response, *statuses: int) -> None:
    assert 400 <= answer.status_code < 500, (answer.status_code, answer.text[:300])
    if statuses:
        assert answer.status_code in statuses, (answer.status_code, answer.text[:300])
    assert answer.headers["content-type"].startswith("application/json")
    assert isinstance(answer.json()["error"], str) and answer.json()["error"]


# -- what a body may name ----------------------------------------------------------------


def test_a_body_naming_ids_queues_or_sandboxes_the_action_does_not_take_is_refused(
    world: dict[str, Any], raw: redis.Redis
) -> None:
    caller, other = world["caller"], world["other"]
    with Unchanged(raw, world["sandbox"]):
        for name, slug in ACTIONS:
            for body in ({"sandbox": other}, {"queue": f"{other}.fanin"}, {"id": f"{other}.JOBparent"},
                         {"job_id": BAD_NAMES[0]}, {"flows": [{"parent": {"id": "JOBp"}}]},
                         {"a{b}": 1}, {"x:y": 1}, {"new\nline": 1}):
                answer = caller.post(f"/api/widgets/{name}/{slug}", json=body)
                refused(answer, 400)
                assert "does not fit this action" in answer.json()["error"]


def test_a_child_id_the_fan_in_does_not_hold_is_answered_in_words_and_changes_nothing(
    world: dict[str, Any], raw: redis.Redis
) -> None:
    caller = world["caller"]
    with Unchanged(raw, world["sandbox"], whole=False):
        for bad in BAD_NAMES:
            for slug in ("complete-child", "stale", "lapse"):
                answer = caller.post(f"/api/widgets/fanin/{slug}", json={"child": bad})
                assert answer.status_code in (200, 400), answer.text
                if answer.status_code == 200:
                    assert answer.json()["outcome"]["kind"] == "info", answer.text


def test_widget_and_action_names_with_globs_and_braces_answer_404(world: dict[str, Any], raw: redis.Redis) -> None:
    caller = world["caller"]
    with Unchanged(raw, world["sandbox"]):
        for path in ["/api/widgets/fan*in/complete-child", "/api/widgets/fanin/%7Bx%7D",
                     "/api/widgets/fanin/complete%0Achild", "/api/widgets/%2A/reset", "/api/widgets/fanin/reset%3A",
                     "/api/widgets/..%2Ffanin/reset", "/api/widgets/console/reset"]:
            refused(caller.post(path, json={}), 404)
        refused(caller.get("/api/widgets/fan%7Bin%7D/state"), 404)
        refused(caller.get("/api/stream?widgets=fanin,%7Bx%7D"), 404)
        # the sentence whole, its closing quote included
        assert caller.get("/api/widgets/nope/state").json() == {"error": "no widget named 'nope'"}


def test_a_body_that_is_not_a_json_object_is_refused_before_anything_runs(
    world: dict[str, Any], raw: redis.Redis
) -> None:
    caller = world["caller"]
    with Unchanged(raw, world["sandbox"]):
        for content in [b"[1]", b'"x"', b"{", b"\xff\xfe", b"NaN", b'{"child": NaN}', b"[" * 5000 + b"]" * 5000,
                        b'{"a":' * 50 + b"1" + b"}" * 50, b"1" * 5000]:
            for name, slug in ACTIONS:
                refused(caller.post(f"/api/widgets/{name}/{slug}", content=content), 400, 413)


def test_a_megabyte_is_refused_without_being_read_with_or_without_a_length(
    world: dict[str, Any], raw: redis.Redis
) -> None:
    caller = world["caller"]
    megabyte = "x" * (1024 * 1024)

    def chunks() -> Iterator[bytes]:  # no Content-Length: read until the cap, then refused
        yield b'{"child": "'
        for _ in range(64):
            yield b"x" * 16384
        yield b'"}'

    with Unchanged(raw, world["sandbox"]):
        for name, slug in ACTIONS:
            refused(caller.post(f"/api/widgets/{name}/{slug}", json={"child": megabyte}), 413)
        refused(caller.post("/api/widgets/fanin/complete-child", content=chunks(),
                            headers={"Content-Type": "application/json"}), 413)
        refused(caller.post("/api/console", json={"command": "GET " + megabyte}), 413)


def test_a_batch_of_ones_own_past_its_caps_is_refused_before_anything_runs(
    world: dict[str, Any], raw: redis.Redis
) -> None:
    caller = world["caller"]

    def batch(flows: int = 1, children: int = 1, payload: str = "p") -> dict[str, Any]:
        return {"flows": [{"parent": {"id": f"JOBp{f}", "payload": payload},
                           "children": [{"id": f"JOBc{f}x{c}", "payload": "c"} for c in range(children)]}
                          for f in range(flows)]}

    bodies: list[dict[str, Any]] = [
        batch(children=17), batch(flows=17), batch(payload="x" * 2048), batch(children=10_000), {"flows": []},
        {"flows": [{"parent": {"id": "JOBp"}, "children": [{"id": "JOBc", "queue": world["other"]}]}]}]
    with Unchanged(raw, world["sandbox"]):
        for body in bodies:
            refused(caller.post("/api/widgets/ledger/own-batch", json=body), 400, 413)


# -- who asks ---------------------------------------------------------------------------


def forged_cookies(world: dict[str, Any]) -> list[str | None]:
    other, own = world["other"], world["caller"].cookies.get(COOKIE)
    elsewhere = URLSafeSerializer("not-the-secret", salt="emqlab-sandbox")
    payload = base64.urlsafe_b64encode(json.dumps(other).encode()).decode().rstrip("=")
    return [
        None,
        "garbage",
        other,  # another sandbox's id, unsigned
        elsewhere.dumps(other),  # signed with another secret
        elsewhere.dumps(world["sandbox"]),
        own.split(".", 1)[0] + "." + ("A" if own.split(".", 1)[1][0] != "A" else "B") + own.split(".", 1)[1][1:],
        payload + "." + own.split(".", 1)[1],  # another sandbox's id under the caller's own signature
    ]


def test_forged_and_missing_cookies_are_refused_everywhere(site: LiveSite, world: dict[str, Any],
                                                          raw: redis.Redis) -> None:
    with Unchanged(raw, world["sandbox"]):
        for value in forged_cookies(world):
            client = site.client()
            if value is not None:
                client.cookies.set(COOKIE, value)
            for name, slug in ACTIONS:
                refused(client.post(f"/api/widgets/{name}/{slug}", json={}), 403)
            for path in ("/api/widgets/fanin/state", "/api/stream?widgets=fanin", "/api/console", "/api/progress"):
                refused(client.get(path), 403)
            refused(client.post("/api/console", json={"command": "PING"}), 403)


def test_neither_the_query_string_nor_a_forged_class_cookie_moves_an_action_out_of_the_callers_sandbox(
    site: LiveSite, world: dict[str, Any], raw: redis.Redis
) -> None:
    caller, other = world["caller"], world["other"]
    with Unchanged(raw, world["sandbox"], whole=False):
        # the action runs in the caller's own sandbox, whatever the query names
        ok = caller.post(f"/api/widgets/fanin/complete-child?sandbox={other}&queue={other}.fanin", json={})
        assert ok.status_code == 200
        assert raw.get(f"emq:{{{world['sandbox']}.fanin}}:job:JOBparent:dependencies") == b"2"
        forged = site.client()
        forged.cookies.set(COOKIE, caller.cookies.get(COOKIE))
        forged.cookies.set(classes_direct.ROOM_COOKIE, world["code"])  # the class's code, unsigned: no class
        assert forged.post("/api/widgets/fanin/reset", json={}).status_code == 200
        assert raw.get(f"emq:{{{world['sandbox']}.fanin}}:job:JOBparent:dependencies") == b"3"


def test_state_changes_from_another_site_are_refused_and_the_sites_own_origin_is_accepted(
    site: LiveSite, world: dict[str, Any], raw: redis.Redis
) -> None:
    caller = world["caller"]
    with Unchanged(raw, world["sandbox"]):
        for origin in EVIL_ORIGINS:
            for name, slug in ACTIONS:
                refused(caller.post(f"/api/widgets/{name}/{slug}", json={}, headers={"Origin": origin}), 403)
            refused(caller.post("/progress/start-over", data={"confirm": "yes"}, headers={"Origin": origin}), 403)
        refused(caller.post("/api/widgets/fanin/reset", json={}, headers={"Sec-Fetch-Site": "cross-site"}), 403)
    assert caller.post("/api/widgets/fanin/reset", json={}, headers={"Origin": site.url}).status_code == 200


# -- what pages carry ------------------------------------------------------------------------


def test_pages_carry_a_csp_without_inline_script_and_the_cookie_is_httponly_and_samesite(site: LiveSite) -> None:
    answer = httpx.get(site.url + DIVE)
    csp = answer.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp and "frame-ancestors 'none'" in csp
    cookie = answer.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    for path in ["/", "/flows", DIVE, "/progress"]:
        body = httpx.get(site.url + path).text
        assert "<script>" not in body and " style=" not in body and "onclick" not in body, path
    api = site.visitor().get("/api/widgets/fanin/state")
    assert api.headers["cache-control"] == "no-store" and api.headers["x-content-type-options"] == "nosniff"
