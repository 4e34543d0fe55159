"""server/web/body.py without a server: the byte cap, JSON parsing, and the
floor every action body must pass (field names, ids, sandboxes, sizes)."""

from __future__ import annotations

import json

import pytest

from server.web import body
from server.web.body import BadBody, BodyTooLarge, ClientGone
from tests.unit.web.asgi import Upload, request

CAP = 64


async def read(raw: bytes | list[bytes], headers: dict[str, str] | None = None, cap: int = CAP) -> dict:
    chunks = raw if isinstance(raw, list) else [raw]
    return await body.read_json(request(headers, Upload(chunks)), cap)


# -- reading: the byte cap and JSON ------------------------------------------------


async def test_an_empty_or_blank_body_reads_as_an_empty_object() -> None:
    assert await read(b"") == {}
    assert await read(b"  \n ") == {}


async def test_a_json_object_is_read_whole_across_chunks() -> None:
    assert await read([b'{"child": "JOB', b'child1", "n": 2}']) == {"child": "JOBchild1", "n": 2}


async def test_a_declared_length_past_the_cap_is_refused_with_413_before_any_byte_is_read() -> None:
    upload = Upload([b"{}"])
    with pytest.raises(BodyTooLarge, match=f"larger than {CAP} bytes") as refused:
        await body.read_json(request({"content-length": str(CAP + 1)}, upload), CAP)
    assert refused.value.status == 413
    assert upload.read == 0


async def test_a_body_streamed_past_the_cap_stops_being_read_at_the_chunk_that_passes_it() -> None:
    upload = Upload([b"x" * 40, b"x" * 40, b"x" * 40, b"x" * 40])
    with pytest.raises(BodyTooLarge):
        await body.read_json(request(upload=upload), CAP)
    assert upload.read == 2


async def test_a_body_of_exactly_the_cap_is_read() -> None:
    text = json.dumps({"a": "x" * (CAP - 9)}).encode()
    assert len(text) == CAP
    assert await read(text, {"content-length": str(CAP)}) == {"a": "x" * (CAP - 9)}


async def test_a_content_length_that_is_not_a_number_is_refused_with_400() -> None:
    with pytest.raises(BadBody, match="Content-Length header is not a number") as refused:
        await read(b"{}", {"content-length": "12abc"})
    assert refused.value.status == 400


async def test_a_client_that_hangs_up_mid_body_is_its_own_doing_not_a_server_fault() -> None:
    with pytest.raises(ClientGone, match="disconnected before its request body arrived") as gone:
        await body.read_json(request(upload=Upload([b'{"a":'], disconnect=True)), CAP)
    assert gone.value.status == 400


@pytest.mark.parametrize("raw", [b"[1, 2]", b'"text"', b"3", b"null"])
async def test_a_body_that_is_not_a_json_object_is_refused(raw: bytes) -> None:
    with pytest.raises(BadBody, match="must be a JSON object"):
        await read(raw)


@pytest.mark.parametrize("raw", [b"{'a': 1}", b'{"a": }', b"\xff\xfe{}", b'{"a": NaN}', b'{"a": Infinity}'])
async def test_text_that_is_not_strict_json_is_refused_saying_so(raw: bytes) -> None:
    with pytest.raises(BadBody, match="not valid JSON"):
        await read(raw)


async def test_json_nested_past_what_python_can_parse_is_refused_as_too_deep() -> None:
    deep = b"[" * 200_000 + b"]" * 200_000
    with pytest.raises(BadBody, match="nested too deeply"):
        await read(deep, cap=len(deep))


# -- the floor: what every body must be ---------------------------------------------


def test_a_good_body_passes_unchanged() -> None:
    sent = {"child": "JOBchild1", "queue": "fanin", "step": 3, "non_job": True, "flows": [{"parent_id": "JOBp"}]}
    assert body.check(sent, 1024) is sent


@pytest.mark.parametrize("name", ["a:b", "{x}", "a b", "", "x" * 129, "a*", "line\n"])
def test_a_field_name_outside_the_id_alphabet_is_refused_naming_it_and_where(name: str) -> None:
    with pytest.raises(BadBody, match=r"the field name .* at the top is not allowed"):
        body.check({name: 1}, 1024)
    with pytest.raises(BadBody, match=r"at outer is not allowed"):
        body.check({"outer": {name: 1}}, 1024)


@pytest.mark.parametrize("name", ["sandbox", "Sandbox", "sandbox_id"])
def test_no_body_may_name_a_sandbox_field(name: str) -> None:
    with pytest.raises(BadBody, match="your sandbox comes from your cookie"):
        body.check({name: "x"}, 1024)


@pytest.mark.parametrize("key", ["id", "queue", "parent", "child", "job_id", "mail_queue", "ids"])
def test_a_value_under_an_id_like_key_must_be_a_well_formed_id(key: str) -> None:
    value: object = ["JOBok", "JOB{bad}"] if key == "ids" else "emq:{x}:JOBbad"
    with pytest.raises(BadBody, match="is not a well-formed id or queue name"):
        body.check({key: value}, 1024)


def test_the_path_of_a_bad_id_in_a_list_names_its_index() -> None:
    with pytest.raises(BadBody, match=r"^ids\[1\] = \"bad id\""):
        body.check({"ids": ["JOBgood", "bad id"]}, 1024)


def test_the_same_text_under_a_key_that_is_not_id_like_is_only_text() -> None:
    assert body.check({"note": "emq:{x}:JOBbad and spaces"}, 1024)


@pytest.mark.parametrize("value", ["s0a1b2c3d4e", "s0a1b2c3d4e.fanin"])
def test_an_id_or_queue_that_starts_with_a_sandbox_id_is_refused(value: str) -> None:
    with pytest.raises(BadBody, match="names a sandbox"):
        body.check({"queue": value}, 1024)


def test_string_size_is_counted_in_utf8_bytes_against_the_payload_cap() -> None:
    assert body.check({"note": "é" * 512}, 1024)  # 1,024 bytes
    with pytest.raises(BadBody, match=r"^note is longer than 1024 bytes"):
        body.check({"note": "é" * 512 + "x"}, 1024)


def test_a_lone_surrogate_is_not_text() -> None:
    with pytest.raises(BadBody, match="is not valid text"):
        body.check({"note": "\ud800"}, 1024)


def test_nesting_is_allowed_to_the_max_depth_and_refused_past_it() -> None:
    def nest(depth: int) -> dict:
        value: object = 1
        for _ in range(depth):
            value = {"a": value}
        return value  # type: ignore[return-value]

    assert body.check(nest(body.MAX_DEPTH), 1024)
    with pytest.raises(BadBody, match=f"nested more than {body.MAX_DEPTH} deep"):
        body.check(nest(body.MAX_DEPTH + 1), 1024)


def test_a_body_with_too_many_values_is_refused() -> None:
    with pytest.raises(BadBody, match=f"more than {body.MAX_NODES} values"):
        body.check({"many": list(range(body.MAX_NODES))}, 1024)


@pytest.mark.parametrize("number", [float("inf"), float("-inf"), float("nan")])
def test_a_number_that_is_not_finite_is_refused(number: float) -> None:
    with pytest.raises(BadBody, match=r"^step is not a finite number"):
        body.check({"step": number}, 1024)


def test_a_whole_number_past_what_a_double_holds_exactly_is_refused() -> None:
    assert body.check({"step": 2**53}, 1024)
    with pytest.raises(BadBody, match=r"^step is too large a number"):
        body.check({"step": 2**53 + 1}, 1024)
