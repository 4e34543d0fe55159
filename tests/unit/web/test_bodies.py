"""Request bodies (server/web/bodies.py): read up to a cap without reading on,
then decoded into the action's own msgspec type, a misfit named in a 400."""

from __future__ import annotations

import msgspec
import pytest

from server.web import bodies
from server.widgets.base import Body, GotoBody
from server.widgets.fanin import ChildBody
from tests.unit.web.asgi import Upload, request


def bad(data: bytes, kind: type[Body]) -> bodies.BadBody:
    with pytest.raises(bodies.BadBody) as caught:
        bodies.decode(data, kind)
    return caught.value


def test_an_empty_body_is_an_empty_object() -> None:
    assert bodies.decode(b"", Body) == Body()
    assert bodies.decode(b"{}", ChildBody) == ChildBody()


def test_a_body_is_decoded_into_the_actions_type() -> None:
    body = bodies.decode(b'{"child": "JOBchild2", "predict": {"question": "q", "answer": 2}}', ChildBody)
    assert body.child == "JOBchild2" and body.predict is not None and body.predict.answer == 2


@pytest.mark.parametrize(("data", "kind", "named"), [
    (b'{"sandbox": "s0123456789"}', Body, "sandbox"),
    (b'{"child": 5}', ChildBody, "(its child)"),
    (b'{"step": -1}', GotoBody, "(its step)"),
    (b'{"step": 1.5}', GotoBody, "(its step)"),
    (b"{}", GotoBody, "step"),
    (b'{"predict": {"question": "q", "answer": 1, "extra": 1}}', Body, "extra"),
    (b'{"predict": {"question": 3}}', Body, "(its predict, its question)"),
])
def test_a_body_that_does_not_fit_is_a_400_naming_the_field(data: bytes, kind: type[Body], named: str) -> None:
    refusal = bad(data, kind)
    assert refusal.status == 400 and named in str(refusal) and str(refusal).startswith("the body does not fit")


@pytest.mark.parametrize("data", [b"[1]", b'"x"', b"{", b"\xff\xfe", b"NaN", b'{"a": NaN}', b"1" * 5000,
                                  b"[" * 5000 + b"]" * 5000])
def test_a_body_that_is_not_a_json_object_is_a_400(data: bytes) -> None:
    assert bad(data, Body).status == 400


async def test_a_declared_length_over_the_cap_is_refused_without_reading_the_body() -> None:
    upload = Upload([b"x" * 100])
    with pytest.raises(bodies.BadBody) as caught:
        await bodies.raw(request({"content-length": "5000"}, upload), cap=1024)
    assert caught.value.status == 413 and upload.read == 0


async def test_a_body_without_a_length_is_read_only_up_to_the_cap() -> None:
    upload = Upload([b"x" * 600] * 10)
    with pytest.raises(bodies.BadBody) as caught:
        await bodies.raw(request(upload=upload), cap=1024)
    assert caught.value.status == 413 and upload.read == 2  # the chunk that passed the cap, and no further


async def test_a_body_under_the_cap_arrives_whole() -> None:
    upload = Upload([b'{"child":', b' "JOBchild1"}'])
    data = await bodies.raw(request(upload=upload), cap=1024)
    assert bodies.decode(data, ChildBody).child == "JOBchild1"


class _Child(msgspec.Struct):
    id: str


class _Flow(msgspec.Struct):
    children: list[_Child]


class _Batch(msgspec.Struct):
    flows: list[_Flow]


def test_a_body_that_does_not_fit_is_refused_in_words_with_no_json_path() -> None:
    with pytest.raises(bodies.BadBody) as refused:
        bodies.decode(b'{"flows": [{"children": [{"id": "JOBa"}, {"id": 7}]}]}', _Batch)
    said = str(refused.value)
    assert "$." not in said and "(flow 1, child 2, its id)" in said and "Expected `str`, got `int`" in said


def test_a_missing_field_and_a_list_item_are_named_in_words() -> None:
    with pytest.raises(bodies.BadBody) as refused:
        bodies.decode(b'{"flows": [{}]}', _Batch)
    assert "(flow 1)" in str(refused.value) and "children" in str(refused.value)
