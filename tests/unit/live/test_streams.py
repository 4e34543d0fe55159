"""The live layer's parts that need no Valkey: a change becomes frames once for
every page of a sandbox (server/live/streams.py), a widget's lock closes the
batch of one action, and the hub drops what no page shows (hub.py); the
cluster's topology and the lab's events are read one way (hub.py, events.py)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence

from server.live import events, heartbeat
from server.live import hub as hub_module
from server.live.hub import UNREACHABLE, Hub
from server.live.streams import QUEUE_CAP, Batches, Change, Notice, Streams, Worded, frame, html_frame

SANDBOX, OTHER = "s0123456789", "sabcdefghij"


class Reads:
    """A stand-in for the painter (server/widgets/frames.py): counts the drawings, one frame per
    (sandbox, widget), and keeps the worded effects each was handed."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []
        self.effects: list[Worded] = []

    async def frame(self, sandbox: str, widget: str, effects: Sequence[Worded]) -> bytes:
        self.calls.append((sandbox, widget))
        self.effects.extend(effects)
        return frame("widget", json.dumps({"widget": widget, "sandbox": sandbox}).encode())


def drained(sub: object) -> list[object]:
    return sub.drain()  # type: ignore[attr-defined, no-any-return]


async def test_a_change_is_read_once_per_widget_however_many_pages_show_it() -> None:
    reads = Reads()
    streams = Streams(reads)
    with streams.open(SANDBOX, ("fanin",)) as a, streams.open(SANDBOX, ("fanin", "native")) as b, \
            streams.open(SANDBOX, ("native",)) as c, streams.open(OTHER, ("fanin",)) as elsewhere:
        await streams.deliver(SANDBOX, Change({"fanin"}))
        assert reads.calls == [(SANDBOX, "fanin")]
        first, second = drained(a), drained(b)
        assert first == second and len(first) == 1 and b'"widget": "fanin"' in first[0]  # type: ignore[operator]
        assert drained(c) == [] and drained(elsewhere) == []


async def test_a_widgets_effects_are_worded_without_the_sandbox_prefix_for_its_drawing() -> None:
    reads = Reads()
    streams = Streams(reads)
    batches = Batches(streams.deliver)
    with streams.open(SANDBOX, ("fanin",)) as page:
        key = f"emq:{{{SANDBOX}.fanin}}:job:JOBparent:dependencies"
        batches.notice(SANDBOX, "fanin", f"{SANDBOX}.fanin", key, "incrby")
        await asyncio.sleep(0.1)
        await batches.stop()
        (chunk,) = drained(page)
        assert isinstance(chunk, bytes) and chunk.startswith(b"event: widget")
    (worded,) = reads.effects
    assert worded.key == "emq:{fanin}:job:JOBparent:dependencies" and worded.queue == "fanin"
    assert worded.words == "one fewer outstanding child"


def test_an_html_frame_sends_each_line_as_its_own_data_line() -> None:
    assert html_frame("widget", "<p>\na</p>") == b"event: widget\r\ndata: <p>\r\ndata: a</p>\r\nretry: 1000\r\n\r\n"


async def test_a_notice_reaches_its_sandboxes_streams_and_one_for_none_reaches_all() -> None:
    streams = Streams(Reads())
    with streams.open(SANDBOX, ("fanin",)) as one, streams.open(OTHER, ("fanin",)) as two:
        streams.broadcast(Notice("reset", {"n": 1}), [SANDBOX])
        streams.broadcast(Notice("status", {"n": 2}))
        assert [n.data["n"] for n in drained(one)] == [1, 2]  # type: ignore[attr-defined]
        assert [n.data["n"] for n in drained(two)] == [2]  # type: ignore[attr-defined]
    assert streams.subs == {} and SANDBOX not in streams.subs


async def test_a_stalled_page_is_marked_for_a_resync_instead_of_growing() -> None:
    streams = Streams(Reads())
    with streams.open(SANDBOX, ("fanin",)) as sub:
        for _ in range(QUEUE_CAP + 5):
            streams.broadcast(Notice("status"))
        assert sub.queue.qsize() == QUEUE_CAP and sub.overflowed


# -- batches -------------------------------------------------------------------------


async def closed_changes(script: list[tuple[str, str, str]], wait: float) -> list[Change]:
    got: list[Change] = []

    async def flush(sandbox: str, change: Change) -> None:
        got.append(change)

    batches = Batches(flush)
    for widget, key, event in script:
        batches.notice(SANDBOX, widget, f"{SANDBOX}.{widget}", key, event)
    await asyncio.sleep(wait)
    await batches.stop()
    return got


async def test_an_actions_writes_make_one_change_closed_by_its_locks_deletion() -> None:
    lock, row = f"lab:{{{SANDBOX}.fanin}}:lock", f"emq:{{{SANDBOX}.fanin}}:job:JOBchild1"
    script = [("fanin", lock, "set"), ("fanin", row, "hset"), ("fanin", row, "del"),
              ("fanin", f"lab:{{{SANDBOX}.fanin}}:state", "hset"), ("fanin", lock, "del")]
    (change,) = await closed_changes(script, 0.05)  # well under HELD_MAX: the deletion closed it
    assert change.widgets == {"fanin"}
    assert [e.event for e in change.effects["fanin"]] == ["hset", "del"]  # learner keys only, in order


async def test_writes_without_a_lock_close_after_a_quiet_moment_as_one_change() -> None:
    script = [("fanin", f"emq:{{{SANDBOX}.fanin}}:pending", "zadd"), ("native", f"emq:{{{SANDBOX}.native}}:x", "set")]
    (change,) = await closed_changes(script, 0.1)
    assert change.widgets == {"fanin", "native"} and [len(e) for e in change.effects.values()] == [1, 1]


async def test_a_lock_taken_and_let_go_with_nothing_written_makes_no_change() -> None:
    lock = f"lab:{{{SANDBOX}.fanin}}:lock"
    assert await closed_changes([("fanin", lock, "set"), ("fanin", lock, "del")], 0.35) == []


# -- the hub's dispatch ----------------------------------------------------------------


def test_the_hub_drops_a_notice_of_a_sandbox_no_page_shows_and_hands_on_the_others() -> None:
    seen: list[tuple[str, str]] = []
    hub = Hub("redis://127.0.0.1:1/0", Streams(Reads()), lambda queue: "fanin" if queue.endswith(".fanin") else None)
    hub.batches.notice = lambda sandbox, widget, queue, key, event: seen.append((sandbox, key))  # type: ignore[method-assign]
    with hub.streams.open(SANDBOX, ("fanin",)):
        for key in (f"emq:{{{SANDBOX}.fanin}}:pending", f"emq:{{{OTHER}.fanin}}:pending",
                    f"emq:{{{SANDBOX}.unknown}}:pending", "emq:{fanin}:pending", f"lab:{{{SANDBOX}.fanin}}:lock"):
            hub.dispatch("pmessage", f"__keyspace@0__:{key}", "zadd")
    assert seen == [(SANDBOX, f"emq:{{{SANDBOX}.fanin}}:pending"), (SANDBOX, f"lab:{{{SANDBOX}.fanin}}:lock")]


def test_a_lab_event_is_handed_on_once_however_many_nodes_deliver_it() -> None:
    hub = Hub("redis://127.0.0.1:1/0", Streams(Reads()), lambda queue: None)
    raw = json.dumps({"type": "reset", "sandboxes": [SANDBOX], "data": {"by": "instructor"}, "id": "e1"})
    with hub.streams.open(SANDBOX, ("fanin",)) as page:
        for _ in range(3):  # a cluster delivers a PUBLISH through every node
            hub.dispatch("message", events.EVENTS_CHANNEL, raw)
        hub.dispatch("message", events.EVENTS_CHANNEL, "not json")
        assert [(n.kind, n.data) for n in drained(page)] == [("reset", {"by": "instructor"})]  # type: ignore[attr-defined]


def test_the_hubs_status_says_what_valkey_is_doing() -> None:
    hub = Hub("redis://127.0.0.1:1/0", Streams(Reads()), lambda queue: None)
    assert hub.status() == {"valkey": "down", "notifications": False, "message": UNREACHABLE}
    hub.up, hub.notifications_on = True, True
    assert hub.status()["message"] == "" and not hub.polling()
    hub.notifications_on = False
    assert "may not switch them on" in hub.status()["message"] and hub.polling()
    hub.memory_full = True
    assert "out of memory" in hub.status()["message"] and hub.status()["memory"] == "full"


# -- what the hub reads from Valkey --------------------------------------------------------


def test_notification_flags_count_only_when_they_include_keyspace_events_of_every_kind_used() -> None:
    assert heartbeat.flags_on("KA") and heartbeat.flags_on(b"AKE") and heartbeat.flags_on("Kghzl$")
    assert not heartbeat.flags_on("") and not heartbeat.flags_on("EA") and not heartbeat.flags_on("Kgh")
    assert heartbeat.is_beat_key("emq:{lab-heartbeat}:beat") and heartbeat.is_beat_key("emq:{lab-heartbeat-7}:beat")
    assert not heartbeat.is_beat_key("emq:{s0123456789.fanin}:pending")


def test_the_online_primaries_of_a_cluster_shards_reply_by_endpoint_else_ip() -> None:
    shards = [
        {"nodes": [{"role": "master", "endpoint": "10.0.0.2", "port": 7001, "health": "online"},
                   {"role": "replica", "endpoint": "10.0.0.3", "port": 7002, "health": "online"}]},
        {"nodes": [{"role": "master", "endpoint": "?", "ip": "10.0.0.1", "port": 7000}]},
        {"nodes": [{"role": "master", "endpoint": "10.0.0.4", "port": 7003, "health": "failed"}]},
    ]
    assert hub_module.online_primaries(shards) == ["10.0.0.1:7000", "10.0.0.2:7001"]


def test_a_node_url_keeps_the_sites_credentials() -> None:
    assert hub_module.node_url("redis://user:pw@127.0.0.1:6379/0", "10.0.0.9:7000") == "redis://user:pw@10.0.0.9:7000/0"
    assert hub_module.node_url("redis://127.0.0.1:6379", "10.0.0.9:7000") == "redis://10.0.0.9:7000/0"


def test_an_event_of_no_known_kind_is_ignored_and_each_id_counts_once() -> None:
    assert events.decode(json.dumps({"type": "reset", "data": {}})) == {"type": "reset", "data": {}}
    assert events.decode(json.dumps({"type": "reset", "by": "instructor"})) is None  # no data: not an event
    assert events.decode(json.dumps({"type": "drop-tables"})) is None and events.decode(b"\xff") is None
    seen = events.Seen(2)
    assert [seen.first(i) for i in ("a", "a", "b", "c", "a")] == [True, False, True, True, True]
    assert seen.first(None) and seen.first(None)  # an event without an id is never held back
