"""Adversarial requests against the real site: every one is refused with a 4xx
JSON answer, and every key outside the caller's sandbox is byte-for-byte
what it was (DUMP of every key before and after).

The keyspace holds, besides the caller's sandbox, another visitor's sandbox
and a room's, each with its widgets landed and moved, so there is something to
damage.
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

from server.sandboxes.admission import UNUSED_KEY
from server.sandboxes.lifecycle import sandbox_of_key
from server.sandboxes.sandbox import COOKIE, REGISTRY_KEY
from server.valkey.process import ValkeyProcess
from server.widgets import WIDGETS
from tests.support import DIVE, LiveSite, running, sandbox_of

ACTIONS = [(name, slug) for name, widget in WIDGETS.items() for slug in sorted(widget.actions)]
EVIL_ORIGINS = ["https://evil.example", "null", "http://127.0.0.1:1", "http://127.0.0.1.evil.example"]
BAD_NAMES = ["JOB{x}", "JOB:x", "JOB*", "JOB?", "JOB[ab]", "JOB\nx", "x}{y", "emq:{s}:pending", "a b", "", "J" * 129]


@pytest.fixture(scope="module")
def world(site: LiveSite) -> dict[str, Any]:
    """The caller, another visitor, and a room, each with every widget landed."""
    caller, other, member = site.visitor(), site.visitor(), site.visitor()
    instructor = site.instructor()
    room = instructor.post("/instructor/rooms", json={"name": "Adversarial"}).json()["room"]
    assert member.post("/room/join", data={"code": room["code"], "name": "Member"}).status_code == 303
    together = instructor.post(f"/instructor/rooms/{room['code']}/mode", json={"mode": "together"})
    assert together.status_code == 200
    for client in (caller, other, member):
        for name in WIDGETS:
            assert client.get(f"/api/widgets/{name}/state").status_code == 200
    for client in (other, member):
        assert client.post("/api/widgets/fanin/complete-child").status_code == 200
    return {
        "caller": caller, "sandbox": sandbox_of(caller),
        "other": sandbox_of(other), "room": room,
    }


def dump_outside(r: redis.Redis, sandbox: str) -> dict[bytes, Any]:
    """DUMP of every key outside `sandbox`; the registry without its entry."""
    found: dict[bytes, Any] = {}
    for key in r.scan_iter(b"*", count=1000):
        if sandbox_of_key(key.decode()) == sandbox:
            continue
        if key in (REGISTRY_KEY.encode(), UNUSED_KEY.encode()):
            others = sorted((m, s) for m, s in r.zrange(key, 0, -1, withscores=True) if m != sandbox.encode())
            if others:  # the never-used set may exist only because of the caller's entry
                found[key] = others
        else:
            found[key] = r.dump(key)
    return found


def dump_all(r: redis.Redis) -> dict[bytes, Any]:
    return {key: r.dump(key) for key in r.scan_iter(b"*", count=1000)}


@pytest.fixture
def raw(site: LiveSite) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(site.valkey_url)
    yield client
    client.close()


def refused(answer: httpx.Response, *statuses: int) -> None:
    assert 400 <= answer.status_code < 500, (answer.status_code, answer.text[:300])
    if statuses:
        assert answer.status_code in statuses, (answer.status_code, answer.text[:300])
    assert answer.headers["content-type"].startswith("application/json")
    assert isinstance(answer.json()["error"], str) and answer.json()["error"]


class Unchanged:
    """Asserts the keyspace outside the caller's sandbox (and, for refusals
    made before any write, the whole keyspace) is what it was."""

    def __init__(self, r: redis.Redis, sandbox: str, whole: bool = True) -> None:
        self.r, self.sandbox, self.whole = r, sandbox, whole

    def __enter__(self) -> Unchanged:
        self.outside = dump_outside(self.r, self.sandbox)
        self.everything = dump_all(self.r) if self.whole else None
        return self

    def __exit__(self, *exc: object) -> None:
        if exc[0] is not None:
            return
        assert dump_outside(self.r, self.sandbox) == self.outside
        if self.everything is not None:
            assert dump_all(self.r) == self.everything


# -- ids and queue names ---------------------------------------------------------------


@pytest.mark.parametrize("field", ["id", "queue", "parent", "job_id", "parent_queue"])
def test_ids_and_queue_names_with_braces_colons_globs_and_newlines_are_refused(
    world: dict, raw: redis.Redis, field: str
) -> None:
    caller = world["caller"]
    with Unchanged(raw, world["sandbox"]):
        for name, slug in ACTIONS:
            for bad in BAD_NAMES:
                refused(caller.post(f"/api/widgets/{name}/{slug}", json={field: bad}), 400)
                refused(caller.post(f"/api/widgets/{name}/{slug}", json={"flows": [{field: bad}]}), 400)


def test_field_names_with_braces_colons_globs_and_newlines_are_refused(world: dict, raw: redis.Redis) -> None:
    caller = world["caller"]
    with Unchanged(raw, world["sandbox"]):
        for name, slug in ACTIONS:
            for bad in ["a{b}", "x:y", "k*", "q?", "[x]", "new\nline", "", "emq:{x}:job"]:
                refused(caller.post(f"/api/widgets/{name}/{slug}", json={bad: 1}), 400)


def test_widget_and_action_names_with_glob_and_brace_characters_answer_404(world: dict, raw: redis.Redis) -> None:
    caller = world["caller"]
    with Unchanged(raw, world["sandbox"]):
        for path in ["/api/widgets/fan*in/complete-child", "/api/widgets/fanin/%7Bx%7D",
                     "/api/widgets/fanin/complete%0Achild", "/api/widgets/%2A/reset", "/api/widgets/fanin/reset%3A",
                     "/api/widgets/..%2Ffanin/reset"]:
            refused(caller.post(path, json={}), 404)
        refused(caller.get("/api/widgets/fan%7Bin%7D/state"), 404)
        refused(caller.get("/api/stream?widgets=fanin,%7Bx%7D"), 404)


def test_a_body_that_is_not_a_json_object_is_refused(world: dict, raw: redis.Redis) -> None:
    caller = world["caller"]
    with Unchanged(raw, world["sandbox"]):
        for content in [b"[1]", b"\"x\"", b"{", b"\xff\xfe", b"NaN", b"{\"a\": NaN}", b"{\"a\": 1e999}",
                        b"[" * 5000 + b"]" * 5000, b"{\"a\":" * 50 + b"1" + b"}" * 50, b"1" * 5000]:
            refused(caller.post("/api/widgets/fanin/complete-child", content=content), 400, 413)


# -- sizes ---------------------------------------------------------------------------


def test_one_megabyte_payloads_are_refused_without_being_read(world: dict, raw: redis.Redis) -> None:
    caller = world["caller"]
    megabyte = "x" * (1024 * 1024)
    with Unchanged(raw, world["sandbox"]):
        for name, slug in ACTIONS:
            refused(caller.post(f"/api/widgets/{name}/{slug}", json={"payload": megabyte}), 413)

        def chunks() -> Iterator[bytes]:  # no Content-Length: read until the cap, then refused
            yield b'{"payload": "'
            for _ in range(64):
                yield b"x" * 16384
            yield b'"}'

        refused(caller.post("/api/widgets/ledger/custom-batch", content=chunks(),
                            headers={"Content-Type": "application/json"}), 413)
        refused(caller.post("/room/join", content=b"code=" + b"A" * 1024 * 1024,
                            headers={"Accept": "application/json"}), 413)


def test_a_payload_over_the_payload_cap_is_refused(world: dict, raw: redis.Redis) -> None:
    caller = world["caller"]
    with Unchanged(raw, world["sandbox"]):
        flows = [{"parent": {"id": "JOBp", "payload": "x" * 2048}, "children": [{"id": "JOBc", "payload": "y"}]}]
        refused(caller.post("/api/widgets/ledger/custom-batch", json={"flows": flows}), 400)


def test_ten_thousand_children_are_refused(world: dict, raw: redis.Redis) -> None:
    caller = world["caller"]
    children = [{"id": f"JOBc{i}", "payload": ""} for i in range(10_000)]
    flows = [{"parent": {"id": "JOBp", "payload": ""}, "children": children}]
    with Unchanged(raw, world["sandbox"]):
        refused(caller.post("/api/widgets/ledger/custom-batch", json={"flows": flows}), 400, 413)
        compact = [{"parent": {"id": "JOBp"}, "children": [{"id": f"c{i}"} for i in range(1500)]}]
        refused(caller.post("/api/widgets/ledger/custom-batch", json={"flows": compact}), 400, 413)


def test_children_and_flows_over_their_caps_are_refused_by_the_ledger(world: dict, raw: redis.Redis) -> None:
    caller = world["caller"]
    many_children = [{"parent": {"id": "JOBp"}, "children": [{"id": f"JOBc{i}"} for i in range(17)]}]
    many_flows = [{"parent": {"id": f"JOBp{i}"}, "children": [{"id": f"JOBc{i}"}]} for i in range(17)]
    # Widget-level refusals come after the visitor's activity is recorded (in
    # the caller's own sandbox); outside it, nothing changes.
    with Unchanged(raw, world["sandbox"], whole=False):
        refused(caller.post("/api/widgets/ledger/custom-batch", json={"flows": many_children}), 400)
        refused(caller.post("/api/widgets/ledger/custom-batch", json={"flows": many_flows}), 400)


# -- cookies -------------------------------------------------------------------------


def forged_cookies(world: dict) -> list[str | None]:
    other = world["other"]
    return [
        None,
        "garbage",
        other,  # another sandbox's id, unsigned
        URLSafeSerializer("not-the-secret", salt="emqlab-sandbox").dumps(other),  # signed with another secret
        URLSafeSerializer("not-the-secret", salt="emqlab-sandbox").dumps(world["sandbox"]),
        tampered_signature(world["caller"].cookies.get(COOKIE)),
        # another sandbox's id under the caller's own signature
        base64.urlsafe_b64encode(json.dumps(other).encode()).decode().rstrip("=")
        + "." + world["caller"].cookies.get(COOKIE).split(".", 1)[1],
    ]


def tampered_signature(cookie: str) -> str:
    payload, signature = cookie.split(".", 1)
    flipped = ("A" if signature[0] != "A" else "B") + signature[1:]
    return f"{payload}.{flipped}"


def test_forged_and_missing_cookies_are_refused(site: LiveSite, world: dict, raw: redis.Redis) -> None:
    with Unchanged(raw, world["sandbox"]):
        for value in forged_cookies(world):
            client = site.client()
            if value is not None:
                client.cookies.set(COOKIE, value)
            for name, slug in ACTIONS:
                refused(client.post(f"/api/widgets/{name}/{slug}", json={}), 403)
            refused(client.get("/api/widgets/fanin/state"), 403)
            refused(client.get("/api/stream?widgets=fanin"), 403)


def test_another_sandbox_cannot_be_named_in_a_body(world: dict, raw: redis.Redis) -> None:
    caller, other = world["caller"], world["other"]
    with Unchanged(raw, world["sandbox"]):
        for name, slug in ACTIONS:
            for body in [{"sandbox": other}, {"queue": f"{other}.fanin"}, {"id": f"{other}.JOBparent"},
                         {"flows": [{"parent": {"id": "JOBp"},
                                     "children": [{"id": "JOBc", "queue": f"{other}.fanin"}]}]},
                         {"sandbox_id": other}]:
                refused(caller.post(f"/api/widgets/{name}/{slug}", json=body), 400)


def test_another_sandbox_named_in_the_url_or_a_forged_room_cookie_stays_untouched(
    site: LiveSite, world: dict, raw: redis.Redis
) -> None:
    caller, other = world["caller"], world["other"]
    with Unchanged(raw, world["sandbox"], whole=False):
        # Query strings are not read: the action runs in the caller's own sandbox.
        ok = caller.post(f"/api/widgets/fanin/reset?sandbox={other}&queue={other}.fanin")
        assert ok.status_code == 200
        assert ok.json()["snapshot"]["queues"][0]["queue"] == f"{world['sandbox']}.fanin"
        forged = site.client()
        forged.cookies.set(COOKIE, caller.cookies.get(COOKIE))
        forged.cookies.set("emqlab_room", world["room"]["code"])  # unsigned: refused, then dropped
        refused(forged.post("/api/widgets/fanin/reset"), 403)
        forged.cookies.delete("emqlab_room")
        ok = forged.post("/api/widgets/fanin/reset")
        assert ok.status_code == 200
        assert ok.json()["snapshot"]["queues"][0]["queue"] == f"{world['sandbox']}.fanin"
        refused(caller.post("/instructor/reset", json={"sandbox": other}), 401)


# -- origins -------------------------------------------------------------------------


def test_state_changes_from_foreign_origins_are_refused(world: dict, raw: redis.Redis) -> None:
    caller = world["caller"]
    with Unchanged(raw, world["sandbox"]):
        for origin in EVIL_ORIGINS:
            headers = {"Origin": origin}
            for name, slug in ACTIONS:
                refused(caller.post(f"/api/widgets/{name}/{slug}", json={}, headers=headers), 403)
            refused(caller.post("/room/join", json={"code": world["room"]["code"], "name": "x"}, headers=headers), 403)
            refused(caller.post("/room/leave", json={}, headers=headers), 403)
            refused(caller.post("/instructor/sign-in", json={"token": "x"}, headers=headers), 403)
        refused(
            caller.post("/api/widgets/fanin/complete-child", json={}, headers={"Sec-Fetch-Site": "cross-site"}), 403
        )


def test_the_same_origin_is_accepted(site: LiveSite, world: dict) -> None:
    answer = world["caller"].post("/api/widgets/fanin/reset", headers={"Origin": site.url})
    assert answer.status_code == 200


# -- headers -------------------------------------------------------------------------


def test_pages_carry_a_csp_without_inline_script_and_the_cookie_is_httponly_and_samesite(site: LiveSite) -> None:
    answer = httpx.get(site.url + DIVE)
    csp = answer.headers["content-security-policy"]
    assert "script-src 'self'" in csp and "unsafe-inline" not in csp
    cookie = answer.headers["set-cookie"].lower()
    assert "httponly" in cookie and "samesite=strict" in cookie
    for path in ["/instructor", "/room", DIVE, "/"]:
        body = httpx.get(site.url + path).text
        assert "<script>" not in body and " style=" not in body and "onclick" not in body


def test_a_rate_limit_per_visitor_answers_429(valkey_server: ValkeyProcess) -> None:
    with running(valkey_server.url, {"EMQLAB_RATE_LIMIT": "5"}) as limited:
        client = limited.visitor()
        answers = [client.post("/api/widgets/fanin/redeliver").status_code for _ in range(8)]
        assert answers[:5] == [200] * 5
        assert answers[5:] == [429] * 3
        other = limited.visitor()
        assert other.post("/api/widgets/fanin/redeliver").status_code == 200
