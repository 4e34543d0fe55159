"""The rules of a class that need no server: which sandbox each mode makes a
member act in, how a display name is cleaned, how progress is said on the
roster, and who counts as online."""

from __future__ import annotations

import pytest

from server.live import presence
from server.sandboxes import learners, rooms, roster

HOST, SHARED, ADA = "shost000000", "sshared0000", "sada0000000"


def room(mode: str, host: str = HOST) -> rooms.Room:
    return rooms.Room(code="ABC234", name="x", sandbox=SHARED, mode=mode, created=0.0, host=host)


@pytest.mark.parametrize(("mode", "visitor", "acting"), [
    ("own", ADA, (ADA, False)),
    ("own", HOST, (HOST, False)),
    ("demo", ADA, (HOST, True)),
    ("demo", HOST, (HOST, False)),
    ("together", ADA, (SHARED, False)),
    ("together", HOST, (SHARED, False)),
])
def test_each_mode_names_the_sandbox_a_member_acts_in_and_whether_it_is_read_only(
    mode: str, visitor: str, acting: tuple[str, bool]
) -> None:
    assert room(mode).acting(visitor) == acting


def test_a_demo_without_a_host_leaves_each_learner_in_their_own_sandbox() -> None:
    assert room("demo", host="").acting(ADA) == (ADA, False)


@pytest.mark.parametrize(("raw", "clean"), [("  Ada   Lovelace ", "Ada Lovelace"), ("é" * 40, "é" * 40),
                                            ("<b>x</b>", "<b>x</b>")])
def test_a_display_name_keeps_its_text_with_spaces_collapsed(raw: str, clean: str) -> None:
    assert learners.clean_name(raw) == clean


@pytest.mark.parametrize("raw", ["", "   ", "x" * 41, None, 7, "a\x00b", "a\u200bb"])
def test_a_display_name_that_cannot_be_one_is_refused(raw: object) -> None:
    with pytest.raises(learners.BadName):
        learners.clean_name(raw)


def test_the_roster_says_each_widget_progress_in_words() -> None:
    made = {
        "fanin": {"reached": 2, "steps": 4, "done": False, "asked": 2, "right": 1, "verdict": "Not quite: …"},
        "outbox": {"reached": 5, "steps": 5, "done": True, "asked": 0, "right": 0, "verdict": ""},
    }
    assert roster.progress_words(made) == (
        "fanin 2 of 4 steps, 1 of 2 predictions right (last: Not quite) · outbox done"
    )
    assert roster.progress_words({}) == "not started"


def test_online_needs_a_counted_stream_and_a_recent_beat() -> None:
    now = 1_000_000
    assert presence.is_online({"streams": "1", "beat": str(now - 1000)}, now)
    assert not presence.is_online({"streams": "0", "beat": str(now)}, now)
    assert not presence.is_online({"streams": "2", "beat": str(now - int(presence.ONLINE_WITHIN * 1000) - 1)}, now)
    assert not presence.is_online({"streams": "x"}, now)
