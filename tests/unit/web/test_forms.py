"""server/web/forms.py without a server: one reader for HTML forms and JSON,
the JSON-or-page choice, and the true/false words a form may send."""

from __future__ import annotations

import pytest

from server.web import forms
from server.web.body import BadBody, BodyTooLarge
from tests.unit.web.asgi import Upload, request

FORM = "application/x-www-form-urlencoded"


async def fields(raw: bytes, ctype: str = FORM, headers: dict[str, str] | None = None) -> dict:
    sent = {"content-type": ctype, **(headers or {})} if ctype else dict(headers or {})
    return await forms.read_fields(request(sent, Upload([raw])))


@pytest.mark.parametrize(
    ("headers", "json"),
    [
        ({"content-type": "application/json"}, True),
        ({"content-type": "Application/JSON; charset=utf-8"}, True),
        ({"accept": "application/json"}, True),
        ({"accept": "text/html,application/xhtml+xml,application/json;q=0.9"}, False),
        ({"content-type": FORM, "accept": "text/html"}, False),
        ({}, False),
    ],
)
def test_json_callers_get_json_and_browsers_posting_a_form_get_pages(headers: dict[str, str], json: bool) -> None:
    assert forms.wants_json(request(headers)) is json


async def test_a_urlencoded_form_reads_as_its_fields_blank_ones_kept() -> None:
    assert await fields(b"name=Tuesday+class&code=ABC234&note=") == {
        "name": "Tuesday class", "code": "ABC234", "note": "",
    }


async def test_a_form_without_a_content_type_is_read_as_urlencoded() -> None:
    assert await fields(b"token=t%C3%A9", ctype="") == {"token": "té"}


async def test_a_json_body_reads_as_its_object() -> None:
    assert await fields(b'{"demo": true}', ctype="application/json") == {"demo": True}


async def test_an_empty_form_reads_as_no_fields() -> None:
    assert await fields(b"") == {}


async def test_another_content_type_is_refused_naming_the_two_accepted() -> None:
    with pytest.raises(BadBody, match=r"send a form \(application/x-www-form-urlencoded\) or a JSON object"):
        await fields(b"name=x", ctype="text/plain")


async def test_a_form_declared_larger_than_the_cap_is_refused_with_413() -> None:
    declared = {"content-length": str(forms.FORM_MAX_BYTES + 1)}
    with pytest.raises(BodyTooLarge, match=f"the form is larger than {forms.FORM_MAX_BYTES} bytes"):
        await fields(b"a=1", headers=declared)


async def test_a_form_streamed_past_the_cap_is_refused_with_413() -> None:
    with pytest.raises(BodyTooLarge, match="the form is larger than"):
        await fields(b"a=" + b"x" * forms.FORM_MAX_BYTES)


async def test_a_form_that_is_not_utf8_cannot_be_read() -> None:
    with pytest.raises(BadBody, match="the form cannot be read"):
        await fields(b"name=\xff\xfe")


async def test_a_form_with_more_than_twenty_fields_is_refused() -> None:
    many = "&".join(f"f{i}=x" for i in range(21)).encode()
    assert len(await fields("&".join(f"f{i}=x" for i in range(20)).encode())) == 20
    with pytest.raises(BadBody, match="the form cannot be read"):
        await fields(many)


@pytest.mark.parametrize("value", [True, "1", "true", "TRUE", " on ", "yes"])
def test_the_words_for_true_read_as_true(value: object) -> None:
    assert forms.as_flag(value, "demo") is True


@pytest.mark.parametrize("value", [False, "0", "false", "Off", "no"])
def test_the_words_for_false_read_as_false(value: object) -> None:
    assert forms.as_flag(value, "demo") is False


@pytest.mark.parametrize("value", ["maybe", "", 1, None, "2"])
def test_anything_else_is_refused_naming_the_field(value: object) -> None:
    with pytest.raises(BadBody, match="'demo' must be true or false"):
        forms.as_flag(value, "demo")
