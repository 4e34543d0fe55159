"""The rules of a class that need no server: which sandbox each mode makes a
member act in, which names are text, who counts as online and stuck, how the
roster says progress, and how the class's answers are counted."""

from __future__ import annotations

import json
import time

import pytest

from server.sandboxes import answers, learners, presence, rooms, roster
from server.sandboxes.answers import Given
from server.sandboxes.progress import WidgetProgress

HOST, SHARED, ADA, GRACE, LINUS = "shost000000", "sshared0000", "sada0000000", "sgrace00000", "slinus00000"
STEPS = ["counted", "redelivered", "claimed"]


def room(mode: str, host: str = HOST) -> rooms.Room:
    return rooms.Room(code="ABC234", name="x", sandbox=SHARED, mode=mode, created=0.0, host=host)


@pytest.mark.parametrize(("mode", "visitor", "acting"), [
    ("own", ADA, (ADA, False)), ("own", HOST, (HOST, False)), ("demo", ADA, (HOST, True)),
    ("demo", HOST, (HOST, False)), ("together", ADA, (SHARED, False)), ("together", HOST, (SHARED, False)),
])
def test_each_mode_names_the_sandbox_a_member_acts_in_and_whether_it_is_read_only(
    mode: str, visitor: str, acting: tuple[str, bool]
) -> None:
    assert room(mode).acting(visitor) == acting


@pytest.mark.parametrize(("raw", "clean"), [
    ("  Ada   Lovelace ", "Ada Lovelace"), ("é" * 40, "é" * 40), ("<b>x</b>", "<b>x</b>"),
    ("👩\u200d💻", "👩\u200d💻"), ("می\u200cخواهم", "می\u200cخواهم"), ("e\u0301", "é"),  # NFC: one letter
    ("Nguye\u0302\u0303n", "Nguyễn"),
])
def test_a_display_name_keeps_its_text_joiners_and_spelling_marks(raw: str, clean: str) -> None:
    assert learners.clean_name(raw) == clean


@pytest.mark.parametrize("raw", ["", "   ", "x" * 41, None, 7, "a\x00b", "a\u200bb", "Ada\u202eevil",
                                 "e" + "\u0301" * 40, "\u0301Ada", "\u200d", "a" + "\u0316\u0317\u0318\u0319\u031a"])
def test_a_display_name_that_only_hides_or_garbles_is_refused(raw: object) -> None:
    with pytest.raises(learners.BadName):
        learners.clean_name(raw)


def test_a_room_name_follows_the_same_rule_and_an_empty_one_is_class_room() -> None:
    assert rooms.clean_name("") == "Class room" and rooms.clean_name(" 👩\u200d🏫 Tuesday ") == "👩\u200d🏫 Tuesday"
    with pytest.raises(rooms.BadRoom):
        rooms.clean_name("x\u202e")


def test_online_needs_a_stream_entry_whose_time_has_not_run_out_and_a_dead_sites_entries_lapse() -> None:
    now = int(time.time())
    assert presence.online({"p:a1": f"{now + 45}|/flows"})
    assert presence.page({"p:a1": f"{now + 45}|/flows"}) == "/flows"
    # two pages open: the one heard from last names the page
    assert presence.page({"p:a1": f"{now + 20}|/flows", "p:b2": f"{now + 44}|/batches"}) == "/batches"
    # a killed site's stream never said goodbye: its entry stops counting at its time
    assert not presence.online({"p:a1": f"{now - 1}|/flows"})
    assert presence.page({"p:a1": f"{now - 1}|/flows"}) is None
    # what an older site wrote (a count of streams) counts no one: it could be left behind
    assert not presence.online({"streams": "2", "online_until": str(now + 600), "page": "/flows"})
    assert not presence.online({"p:a1": "junk", "seen": "1"})
    assert presence.beat_every(45) == 15 and presence.beat_every(3) == 1


def record(reached: list[str], asked: int = 0, right: int = 0) -> WidgetProgress:
    return WidgetProgress("fanin", STEPS, reached, asked, right)


def test_a_learner_is_stuck_after_three_wrong_answers_in_a_row_or_idle_on_an_unfinished_widget() -> None:
    now = time.time()
    open_page = {"p:a1": f"{int(now) + 60}|/flows", "widget": "fanin"}
    assert roster.stuck({}, [record(["counted"])], {"fanin": 3}, now) == "3 wrong answers in a row on fanin"
    assert roster.stuck({}, [record(["counted"])], {"fanin": 2}, now) == ""
    idle = {**open_page, "seen": str(int((now - 400) * 1000))}
    assert roster.stuck(idle, [record(["counted"])], {}, now) == "no action for 6 min on fanin, 1 of 3 steps"
    assert roster.stuck(idle, [record(STEPS)], {}, now) == ""  # done: nothing to be stuck on
    assert roster.stuck({**idle, "p:a1": f"{int(now) - 1}|/flows"}, [record(["counted"])], {}, now) == ""  # gone
    # idle counts from the last action in this class: a learner who acted 400 s ago and joined
    # a minute ago is not stuck, and one who joined 6 min ago and did nothing since is
    assert roster.stuck(idle, [record(["counted"])], {}, now, joined=now - 60) == ""
    assert roster.stuck(idle, [record(["counted"])], {}, now, joined=now - 370) == (
        "no action since joining 6 min ago; fanin 1 of 3 steps")


def test_the_roster_says_progress_and_exercises_in_words_and_reads_exercise_checks() -> None:
    best, checks = roster.exercises_of({"ex:fan-in": "3/5", "ex:fan-in:redelivered": "0", "ex:fan-in:counted": "1",
                                        "ex:deliver": "junk", "m:fanin:counted": "1"})
    assert best == {"fan-in": (3, 5)} and checks == {"fan-in": {"counted": True, "redelivered": False}}
    row = roster.Learner(id=ADA, name="Ada", page=None, widget="fanin", online=False, last_seen=None, joined=0.0,
                         records=[record(["counted"], asked=2, right=1)], exercises=best, checks=checks)
    assert roster.progress_words(row) == "fanin 1 of 3 steps, 1 of 2 predictions right"
    assert roster.exercise_words(row) == "fan-in 3 of 5 checks (failed: redelivered)"
    assert row.public()["progress"] == {"fanin": {"reached": 1, "steps": 3, "done": False, "asked": 2, "right": 1,
                                                  "verdict": ""}}


def given(learner: str, value: object, right: bool, round_: int | None = None, feedback: str = "",
          mode: str = "own") -> Given:
    return Given("fanin", "deps", round_, learner, value, right, 0 if round_ else None, 0,  # type: ignore[arg-type]
                 feedback, mode)


def test_the_answers_hash_reads_back_as_answers_and_runs_of_wrong_answers() -> None:
    kept = json.dumps({"value": 3, "right": False, "step": None, "at": 5, "feedback": "the count before"})
    together = json.dumps({"value": 2, "right": True, "step": 1, "at": 9, "text": "Right: Valkey holds 2."})
    fields = {f"fanin|deps|-|{ADA}": kept, f"wrong|fanin|{ADA}": "2", "fanin|odd": "x", f"fanin|q|1|{ADA}": "not json",
              answers.answer_field("fanin", "deps", "together", 1, 1, ADA): together,
              f"fanin|deps|nomode|1|1|{ADA}": kept}
    found, runs = answers.parse(fields)
    assert found == [Given("fanin", "deps", None, ADA, 3, False, None, 5, "the count before"),  # an older site's
                     Given("fanin", "deps", 1, ADA, 2, True, 1, 9, "", "together", "Right: Valkey holds 2.")]
    assert runs == {("fanin", ADA): 2}


def test_one_learners_answers_in_two_modes_are_two_answers_counted_apart() -> None:
    found = [given(ADA, 3, False), given(ADA, 2, True, mode="together"), given(GRACE, 2, True, mode="together")]
    own, together = answers.counted(found, [ADA, GRACE], {})
    assert (own.mode, own.answered, [c.value for c in own.answers]) == ("own", 1, [3])
    assert (together.mode, together.answered) == ("together", 2)
    # answers.json names no mode: there both of Ada's answers are counted in one entry, neither lost
    [every] = answers.counted(answers.across_modes(found), [ADA, GRACE], {})
    assert every.answered == 2 and [(c.value, c.count, c.right) for c in every.answers] == [(2, 2, True), (3, 1, False)]


def test_answers_are_counted_per_value_and_verdict_with_the_common_wrong_one_and_who_is_missing() -> None:
    found = [given(ADA, 3, False, feedback="the count before"), given(GRACE, 3, False, feedback="the count before"),
             given(LINUS, 2, True), given(HOST, 9, False)]  # the host is no learner: not counted
    [counted] = answers.counted(found, [ADA, GRACE, LINUS, "snobody0000"], {("fanin", "deps"): "Predict: deps?"})
    assert counted.contract() == {"widget": "fanin", "question": "deps", "step": None, "round": None,
                                  "legend": "Predict: deps?", "answered": 3,
                                  "answers": [{"value": 3, "count": 2, "right": False},
                                              {"value": 2, "count": 1, "right": True}]}
    assert counted.common_wrong == answers.Count(3, 2, False) and counted.feedback == "the count before"
    assert counted.missing == ["snobody0000"]


def test_the_same_value_right_at_one_step_and_wrong_at_another_is_two_entries_and_2_is_not_the_text_2() -> None:
    found = [given(ADA, 2, True), given(GRACE, 2, False), given(LINUS, "2", False)]
    [counted] = answers.counted(found, [ADA, GRACE, LINUS], {})
    assert [(c.value, c.count, c.right) for c in counted.answers] == [(2, 1, True), (2, 1, False), ("2", 1, False)]


def test_a_second_round_says_how_the_answers_moved_from_the_first() -> None:
    found = [given(ADA, 3, False, 1), given(GRACE, 2, True, 1), given(LINUS, 3, False, 1),
             given(ADA, 2, True, 2), given(GRACE, 2, True, 2), given(LINUS, 3, False, 2)]
    first, second = answers.counted(found, [ADA, GRACE, LINUS], {})
    assert first.moved == [] and (second.round, second.step) == (2, 0)
    assert [(m.value, m.first, m.second) for m in second.moved] == [(2, 1, 2), (3, 2, 1)]
    assert (second.changed, second.now_right) == (1, 1)
