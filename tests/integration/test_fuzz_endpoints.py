"""Property-based fuzz of the site's inputs on the real site (hypothesis):
whatever body a widget action receives, whatever line the console is given
and whatever a stream's query asks for, the site answers below 500 in JSON
words, and a hostile console line changes no key outside its sandbox (DUMP
of every other key before and after); afterwards every widget of the fuzzed
sandbox still paints.
"""

from __future__ import annotations

import json
from typing import Any
from urllib.parse import quote

import httpx
import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.console.allow import REASONS, RULES
from server.emq import registry
from server.widgets import WIDGETS
from tests.support import SITE_CLOCK, LiveSite, sandbox_of

WIDGET_PATHS = [f"/api/widgets/{name}/{slug}" for name, widget in WIDGETS.items() for slug in sorted(widget.actions)]
FIELDS = ["child", "step", "non_job", "predict", "question", "answer", "flow", "flows", "parent", "children", "id",
          "queue", "payload", "sandbox", "room", "token", "policy", "move"]
QUIET = settings(deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=40),
    st.sampled_from(["JOBchild1", "JOBchild2", "JOB{x}", "deps-after-complete", "s0123456789", "", "\n", "*", "1"]),
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
predictions = st.fixed_dictionaries({"predict": st.fixed_dictionaries(
    {"question": st.sampled_from(["deps-after-complete", "deps-after-stale", "nope", ""]), "answer": json_values})})


@pytest.fixture(scope="module")
def learner(site: LiveSite) -> httpx.Client:
    client = site.visitor()
    for name in WIDGETS:
        assert client.get(f"/api/widgets/{name}/state").status_code == 200
    return client


def below_500_in_words(answer: httpx.Response, sent: Any) -> None:
    assert answer.status_code < 500, (sent, answer.status_code, answer.text[:300])
    assert answer.headers["content-type"].startswith("application/json"), (sent, answer.headers)
    if answer.status_code >= 400:
        said = answer.json()["error"]
        assert isinstance(said, str) and said, (sent, answer.text[:300])


@settings(QUIET, max_examples=400)
@given(path=st.sampled_from(WIDGET_PATHS), payload=st.one_of(json_values, objects, predictions),
       raw=st.one_of(st.none(), st.none(), st.binary(max_size=64)))
def test_no_widget_action_body_makes_the_site_answer_5xx(learner: httpx.Client, path: str, payload: object,
                                                         raw: bytes | None) -> None:
    try:
        content = raw if raw is not None else json.dumps(payload).encode()
    except ValueError:  # a float json cannot write: its bytes are sent as they are
        content = repr(payload).encode()
    below_500_in_words(learner.post(path, content=content, headers={"Content-Type": "application/json"}),
                       (path, content[:200]))


# -- the console -------------------------------------------------------------------------

NAMES = [*RULES, *REASONS, *registry.names(), "eval", "Get", "EMQ.COMPLETE", "EMQ.FAIL", "", "\x00", "ñ"]
QUEUES = ["fanin", "native", "stepper", "outbox.orders", "mine", "*", "", "a}b", "{x", "s0000000000.fanin",
          "sother00000.fanin", "fanin}:job:{x"]
SUFFIXES = ["pending", "active", "dead", "job:JOBparent", "job:JOBparent:dependencies", "job:JOBchild1",
            "job:JOBparent:processed", "flow:outbox", "metrics:completed", "x", "*", "", "job:*", " "]
VALUES = ["0", "1", "-1", "2", "state", "attempts", "pending", "JOBchild1", "JOBparent", "WITHSCORES", "²", "nan",
          "parent_queue", "fanin", "emq:{fanin}:", "x y", "30000", "sq", "xq", "", "1.5", "\\u0073"]
COURSE_KEYS = ["emq:{" + q + "}:" + s for q in ("fanin", "native", "stepper") for s in SUFFIXES[:9]]


def keys() -> st.SearchStrategy[str]:
    return st.one_of(
        st.builds(lambda q, s: "emq:{" + q + "}:" + s, st.sampled_from(QUEUES), st.sampled_from(SUFFIXES)),
        st.sampled_from(["lab:secret", "lab:sandboxes", "*", "emq:", "emq:{", "0", "-1", "WITHSCORES", "MATCH"]),
        st.text(max_size=12),
    )


def quoted(word: str, style: int) -> str:
    if style == 1:
        return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'
    if style == 2:
        return "'" + word + "'"
    if style == 3:
        return '"' + word  # unbalanced
    return word


# lines the console takes as well-formed, so the fuzz writes the sandbox's own keys too
plausible = st.sampled_from([r for r in RULES.values() if r.keys in ("first", "all")]).flatmap(
    lambda rule: st.builds(
        lambda key, values: " ".join([rule.name, key, *(quoted(v, 1) for v in values)]),
        st.sampled_from(COURSE_KEYS),
        st.lists(st.sampled_from(VALUES), min_size=max(0, rule.least - 1), max_size=max(0, min(rule.most - 1, 6))),
    )
)
scripted = st.builds(
    lambda name, n, words: " ".join([name, str(n), *(quoted(w, 1) for w in words)]),
    st.sampled_from([*registry.names(), "EMQ.COMPLETE", "EMQ.FAIL"]),
    st.integers(min_value=0, max_value=6),
    st.lists(st.sampled_from([*COURSE_KEYS, *VALUES]), max_size=12),
)
lines = st.one_of(
    plausible,
    scripted,
    st.builds(lambda name, words, styles: " ".join([name, *(quoted(w, s) for w, s in zip(words, styles))]),
              st.sampled_from(NAMES), st.lists(keys(), max_size=8),
              st.lists(st.integers(min_value=0, max_value=4), min_size=8, max_size=8)),
    st.text(max_size=200),
)
bodies = st.one_of(
    st.builds(lambda line: {"command": line}, lines),
    st.dictionaries(st.sampled_from(["command", "x", "sandbox"]),
                    st.one_of(st.none(), st.integers(), st.text(max_size=20), st.lists(st.text(max_size=5))),
                    max_size=3),
)


def outside(r: redis.Redis, sandbox: str) -> dict[bytes, Any]:
    """Every key outside the sandbox, byte for byte; the site's indexes without its entries."""
    mine = tuple(p.encode() for p in (f"emq:{{{sandbox}.", f"lab:{{{sandbox}", *SITE_CLOCK))
    found: dict[bytes, Any] = {}
    for key in r.scan_iter(count=1000):
        if key.startswith(mine):
            continue
        if r.type(key) == b"zset":  # the registry and its side sets: the caller's activity moves there
            others = sorted(m for m in r.zrange(key, 0, -1) if m != sandbox.encode())
            if others:  # a side set may exist only because of the caller's entry
                found[key] = others
        else:
            found[key] = r.dump(key)
    return found


@pytest.fixture(scope="module")
def victim(site: LiveSite) -> str:
    """Another visitor's sandbox with every widget landed and moved: something to damage."""
    other = site.visitor()
    for name in WIDGETS:
        assert other.get(f"/api/widgets/{name}/state").status_code == 200
    assert other.post("/api/widgets/fanin/complete-child", json={}).status_code == 200
    return sandbox_of(other)


@pytest.fixture(scope="module")
def before(site: LiveSite, learner: httpx.Client, victim: str) -> dict[bytes, Any]:
    return outside(redis.Redis.from_url(site.valkey_url), sandbox_of(learner))


@settings(QUIET, max_examples=250)
@given(body=bodies)
def test_no_console_line_makes_the_site_answer_5xx(learner: httpx.Client, before: dict[bytes, Any],
                                                   body: Any) -> None:
    answer = learner.post("/api/console", json=body)
    below_500_in_words(answer, body)
    if answer.status_code == 200:
        data = answer.json()
        assert data["kind"] in ("reply", "error") and isinstance(data["reply_lines"], list), data


def test_after_the_console_fuzz_no_key_outside_the_sandbox_changed_and_every_widget_still_paints(
    site: LiveSite, learner: httpx.Client, before: dict[bytes, Any]
) -> None:
    assert outside(redis.Redis.from_url(site.valkey_url), sandbox_of(learner)) == before
    for name in WIDGETS:
        answer = learner.get(f"/api/widgets/{name}/state")
        assert answer.status_code < 500, (name, answer.text[:300])
        if answer.status_code == 409 or answer.json()["snapshot"]["problem"]:  # the fuzz changed a key's type
            assert learner.post(f"/api/widgets/{name}/reset", json={}).status_code == 200
        assert learner.get(f"/api/widgets/{name}/state").json()["snapshot"]["problem"] is None


# -- the stream's query ------------------------------------------------------------------

queries = st.one_of(
    st.lists(st.one_of(st.sampled_from([*WIDGETS, "", "console", "fan*in", "{x}", ","]), st.text(max_size=12)),
             max_size=6).map(lambda names: "widgets=" + quote(",".join(names), safe=",")),
    st.text(max_size=60).map(lambda text: quote(text, safe="=&")),
    st.just("widgets=" + ",".join(list(WIDGETS) * 3)),
)


@settings(QUIET, max_examples=80)
@given(query=queries)
def test_no_stream_query_makes_the_site_answer_5xx(learner: httpx.Client, query: str) -> None:
    with learner.stream("GET", f"/api/stream?{query}", timeout=10) as answer:
        assert answer.status_code < 500, (query, answer.status_code)
        if answer.status_code == 200:
            assert answer.headers["content-type"].startswith("text/event-stream")
            first = next(answer.iter_lines())
            assert first.startswith("event: status"), (query, first)
        else:
            body = json.loads(answer.read())
            assert answer.status_code == 404 and "unknown widgets" in body["error"], (query, body)
