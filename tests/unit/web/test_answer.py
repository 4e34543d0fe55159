"""The site's JSON encoder says what the standard library's would, and a refusal its sentence (server/web/errors.py)."""

from __future__ import annotations

import json

from server.web.errors import JSONAnswer, dumps, refusal_of

SNAPSHOT = {
    "widget": "fanin", "ver": 1796159492262277, "key_count": 7, "landed": True, "outcome": None,
    "readout": "1 of 3 children complete → :dependencies = 2", "queues": [{"keys": [["JOBchild2", 0], ["x", 2.5]]}],
    "picture": {"children": [{"id": "JOBchild1", "token": None}]},
}


def test_an_answer_decodes_to_exactly_what_was_given() -> None:
    body = bytes(JSONAnswer(SNAPSHOT).body)
    assert json.loads(body) == SNAPSHOT
    assert body == json.dumps(SNAPSHOT, ensure_ascii=False, separators=(",", ":")).encode()


def test_an_answer_is_utf8_json_with_its_content_type() -> None:
    answer = JSONAnswer({"text": "→ é"}, status_code=409)
    assert bytes(answer.body).decode("utf-8") == '{"text":"→ é"}'
    assert answer.status_code == 409 and answer.headers["content-type"] == "application/json"


def test_a_number_key_is_written_as_text_as_json_writes_it() -> None:
    assert json.loads(dumps({1: "a", "b": [1, 2]})) == {"1": "a", "b": [1, 2]}


def test_a_lookup_error_is_a_bug_answered_500_and_logged_not_a_404_that_shows_its_internals() -> None:
    # an IndexError deep in a page's drawing once answered "404 list index out of range"
    assert refusal_of(IndexError("list index out of range")) is None
    assert refusal_of(KeyError("status")) is None


def test_a_scripts_own_wrong_type_is_a_wrong_type_but_a_key_named_against_the_grammar_is_a_bug() -> None:
    from redis.exceptions import ResponseError

    from server.web.errors import WrongType

    held = ResponseError("EMQTYPE hold_parent would write KEYS[1] as a hash, but it holds a string: nothing was "
                         "written", status_code="EMQTYPE")
    assert isinstance(refusal_of(held), WrongType)
    named = ResponseError("EMQTYPE hold_parent would write KEYS[2] as a string, but the key grammar makes that key "
                          "a zset: nothing was written", status_code="EMQTYPE")
    assert refusal_of(named) is None
