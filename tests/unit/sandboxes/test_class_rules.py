"""The rules of a class that need no server: which sandbox each mode makes a
member act in, how a display name is cleaned, and who counts as online."""

from __future__ import annotations

import time

import pytest

from server.sandboxes import learners, presence, rooms

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


def test_online_needs_an_open_stream_whose_lifetime_has_not_run_out() -> None:
    later = str(int(time.time()) + 60)
    assert presence.online({"streams": "1", "online_until": later})
    assert presence.page({"streams": "2", "online_until": later, "page": "/flows"}) == "/flows"
    assert not presence.online({"streams": "0", "online_until": later})
    assert not presence.online({"streams": "1", "online_until": str(int(time.time()) - 1)})  # a killed worker's count
    assert not presence.online({"streams": "x", "online_until": later})
    assert presence.page({"streams": "0", "online_until": later, "page": "/flows"}) is None
