"""A property-based fuzz of the console: whatever line a hostile visitor types,
the site answers below 500, and no key outside the visitor's sandbox changes
(DUMP of every other key before and after). Afterwards every widget of the
fuzzed sandbox still paints (its state endpoint answers below 500)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import redis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from server.console.allow import REASONS, RULES
from server.emq import registry
from server.sandboxes.admission import UNUSED_KEY
from server.sandboxes.lifecycle import sandbox_of_key
from server.sandboxes.sandbox import REGISTRY_KEY
from server.valkey.process import ValkeyProcess
from server.widgets import WIDGETS
from tests.support import LiveSite, running, sandbox_of

NAMES = [*RULES, *REASONS, *registry.names(), "eval", "Get", "EMQ.COMPLETE", "", "\x00", "ñ"]
QUEUES = ["fanin", "stepper", "outbox.orders", "outbox.mail", "results", "mine", "*", "", "a}b", "{x",
          "s0000000000.fanin", "sother00000.fanin", "fanin}:job:{x"]
SUFFIXES = ["pending", "active", "dead", "job:JOBparent", "job:JOBparent:dependencies", "job:JOBchild1",
            "job:JOBparent:processed", "flow:outbox", "metrics:completed", "x", "*", "", "job:*", " "]


def keys() -> st.SearchStrategy[str]:
    return st.one_of(
        st.builds(lambda q, s: "emq:{" + q + "}:" + s, st.sampled_from(QUEUES), st.sampled_from(SUFFIXES)),
        st.sampled_from(["lab:secret", "lab:sandboxes", "*", "emq:", "emq:{", "0", "-1", "WITHSCORES", "MATCH",
                         "parent_queue", "sq", "xq", "30000", "emq:{fanin}:"]),
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


# Lines the console accepts as well-formed, so the fuzz also writes the sandbox's keys.
VALUES = ["0", "1", "-1", "2", "state", "attempts", "pending", "JOBchild1", "JOBparent", "WITHSCORES",
          "parent_queue", "fanin", "outbox.orders", "emq:{fanin}:", "x y", "30000", "sq", "xq", "", "1.5"]
COURSE_KEYS = ["emq:{" + q + "}:" + s for q in ("fanin", "outbox.mail", "results") for s in SUFFIXES[:9]]
plausible = st.sampled_from([r for r in RULES.values() if r.keys in ("first", "all")]).flatmap(
    lambda rule: st.builds(
        lambda key, values: " ".join([rule.name, key, *(quoted(v, 1) for v in values)]),
        st.sampled_from(COURSE_KEYS),
        st.lists(st.sampled_from(VALUES), min_size=max(0, rule.least - 1), max_size=max(0, min(rule.most - 1, 6))),
    )
)
scripted = st.builds(
    lambda name, n, words: " ".join([name, str(n), *(quoted(w, 1) for w in words)]),
    st.sampled_from(registry.names()),
    st.integers(min_value=0, max_value=6),
    st.lists(st.sampled_from([*COURSE_KEYS, *VALUES]), max_size=12),
)
lines = st.one_of(
    plausible,
    scripted,
    st.builds(
        lambda name, words, styles: " ".join([name, *(quoted(w, s) for w, s in zip(words, styles))]),
        st.sampled_from(NAMES),
        st.lists(keys(), max_size=8),
        st.lists(st.integers(min_value=0, max_value=4), min_size=8, max_size=8),
    ),
    st.text(max_size=200),
    st.builds(lambda n: "GET " + "k" * n, st.integers(min_value=1000, max_value=5000)),
)
bodies = st.one_of(
    st.builds(lambda line: {"command": line}, lines),
    st.dictionaries(st.sampled_from(["command", "x", "sandbox"]),
                    st.one_of(st.none(), st.integers(), st.text(max_size=20), st.lists(st.text(max_size=5))),
                    max_size=3),
)


@pytest.fixture(scope="module")
def site() -> Iterator[LiveSite]:
    with ValkeyProcess() as valkey, running(valkey.url) as live:
        yield live


@pytest.fixture(scope="module")
def world(site: LiveSite) -> dict[str, Any]:
    caller, other = site.visitor(), site.visitor()
    for client in (caller, other):
        for name in WIDGETS:
            assert client.get(f"/api/widgets/{name}/state").status_code == 200
    return {"caller": caller, "sandbox": sandbox_of(caller)}


def outside(r: redis.Redis, sandbox: str) -> dict[bytes, Any]:
    found: dict[bytes, Any] = {}
    for key in r.scan_iter(b"*", count=1000):
        if sandbox_of_key(key.decode()) == sandbox:
            continue
        if key in (REGISTRY_KEY.encode(), UNUSED_KEY.encode()):  # the site's bookkeeping of the caller
            found[key] = sorted(m for m in r.zrange(key, 0, -1) if m != sandbox.encode())
        else:
            found[key] = r.dump(key)
    return found


@pytest.fixture(scope="module")
def raw(site: LiveSite) -> Iterator[redis.Redis]:
    client = redis.Redis.from_url(site.valkey_url)
    yield client
    client.close()


@pytest.fixture(scope="module")
def before(world: dict[str, Any], raw: redis.Redis) -> dict[bytes, Any]:
    return outside(raw, world["sandbox"])


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(body=bodies)
def test_hostile_console_lines_answer_below_500(world: dict[str, Any], before: dict[bytes, Any], body: Any) -> None:
    caller: httpx.Client = world["caller"]
    answer = caller.post("/api/console", json=body)
    assert answer.status_code < 500, (body, answer.status_code, answer.text[:300])
    data = answer.json()
    if answer.status_code == 200:
        assert data["kind"] in ("reply", "error") and isinstance(data["reply_lines"], list)
    else:
        assert isinstance(data["error"], str) and data["error"]


def test_after_the_fuzz_no_key_outside_the_sandbox_changed_and_every_widget_still_paints(
    world: dict[str, Any], before: dict[bytes, Any], raw: redis.Redis
) -> None:
    assert outside(raw, world["sandbox"]) == before
    caller: httpx.Client = world["caller"]
    for name in WIDGETS:
        answer = caller.get(f"/api/widgets/{name}/state")
        assert answer.status_code < 500, (name, answer.text[:300])
