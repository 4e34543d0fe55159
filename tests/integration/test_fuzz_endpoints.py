"""A property-based fuzz of every endpoint's body: whatever JSON (or bytes)
arrives, the site answers below 500 — a clear 2xx, 3xx or 4xx, never a crash.

Every widget action (from `server.widgets.WIDGETS`), the room endpoints and
the instructor endpoints (signed in, so the bodies reach the handlers) get
arbitrary JSON values, JSON objects built from the field names the actions
read, and raw bytes.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.valkey.process import ValkeyProcess
from server.widgets import WIDGETS
from tests.support import LiveSite, running

WIDGET_PATHS = [f"/api/widgets/{name}/{slug}" for name, w in WIDGETS.items() for slug in sorted(w.actions)]
ROOM_PATHS = ["/room/join", "/room/leave"]
INSTRUCTOR_PATHS = ["/instructor/reset", "/instructor/rooms", "/instructor/sign-in"]
FIELDS = ["flow", "step", "policy", "flows", "parent", "children", "id", "queue", "payload", "demo", "all",
          "sandbox", "room", "code", "name", "token", "non_job", "use_non_job", "move", "on", "value",
          "fail_parent_on_failure", "ignore_dependency_on_failure"]

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40),
    st.sampled_from(["JOBx", "JOB{x}", "orders", "mail", "fp", "id", "ABC234", "s0123456789", "", "\n", "*"]),
)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=5),
        st.dictionaries(st.one_of(st.sampled_from(FIELDS), st.text(max_size=10)), inner, max_size=5),
    ),
    max_leaves=25,
)
objects = st.dictionaries(st.sampled_from(FIELDS), json_values, max_size=4)
flows = st.fixed_dictionaries({"flows": st.lists(st.fixed_dictionaries({
    "parent": st.fixed_dictionaries({"id": st.one_of(st.text(max_size=8), st.just("JOBp")), "payload": scalars}),
    "children": st.lists(st.dictionaries(st.sampled_from(["id", "payload", "queue", "fail_parent_on_failure",
                                                          "ignore_dependency_on_failure", "children"]), json_values,
                                         max_size=4), max_size=4),
}), max_size=3)})


@pytest.fixture(scope="module")
def site() -> Iterator[LiveSite]:
    with ValkeyProcess() as valkey, running(valkey.url) as live:
        yield live


@pytest.fixture(scope="module")
def clients(site: LiveSite) -> dict[str, httpx.Client]:
    learner = site.visitor()
    instructor = site.instructor()
    code = instructor.post("/instructor/rooms", json={"name": "fuzz"}).json()["room"]["code"]
    assert code
    return {"learner": learner, "instructor": instructor}


def post(client: httpx.Client, path: str, payload: object, raw: bytes | None) -> httpx.Response:
    if raw is not None:
        return client.post(path, content=raw, headers={"Content-Type": "application/json"})
    try:
        content = json.dumps(payload)
    except ValueError:
        content = "{}"
    return client.post(path, content=content, headers={"Content-Type": "application/json"})


@settings(max_examples=1200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(
    path=st.sampled_from(WIDGET_PATHS),
    payload=st.one_of(json_values, objects, flows),
    raw=st.one_of(st.none(), st.none(), st.binary(max_size=64)),
)
def test_no_widget_action_body_makes_the_site_answer_5xx(clients: dict, path: str, payload: object,
                                                         raw: bytes | None) -> None:
    answer = post(clients["learner"], path, payload, raw)
    assert answer.status_code < 500, (path, payload, raw, answer.text[:300])
    assert answer.headers["content-type"].startswith("application/json")


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                                   HealthCheck.too_slow])
@given(
    path=st.one_of(st.sampled_from(ROOM_PATHS + INSTRUCTOR_PATHS),
                   st.builds(lambda code, tail: f"/instructor/rooms/{quote(code, safe='')}/{tail}",
                             st.one_of(st.text(max_size=8), st.just("ABC234")),
                             st.sampled_from(["demo", "join"]))),
    payload=st.one_of(json_values, objects),
    raw=st.one_of(st.none(), st.none(), st.binary(max_size=64)),
    who=st.sampled_from(["learner", "instructor"]),
)
def test_no_room_or_instructor_body_makes_the_site_answer_5xx(clients: dict, path: str, payload: object,
                                                              raw: bytes | None, who: str) -> None:
    answer = post(clients[who], path, payload, raw)
    assert answer.status_code < 500, (path, payload, raw, answer.text[:300])

