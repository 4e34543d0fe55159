"""server/settings.py (pydantic-settings): every limit from its EMQLAB_ variable,
the defaults a laptop wants, and a refusal at start that names the variable
for a value that is not of the field's type, out of its range, or at odds
with another setting."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from pydantic import ValidationError

from server.settings import Settings, truth


@pytest.fixture(autouse=True)
def bare_env(monkeypatch: pytest.MonkeyPatch) -> Iterator[pytest.MonkeyPatch]:
    """No EMQLAB_ variable from the shell that runs the tests."""
    for name in list(os.environ):
        if name.startswith("EMQLAB_"):
            monkeypatch.delenv(name)
    yield monkeypatch


def read(monkeypatch: pytest.MonkeyPatch, **env: str) -> Settings:
    for name, value in env.items():
        monkeypatch.setenv(f"EMQLAB_{name}", value)
    return Settings.from_env()


def refusal(monkeypatch: pytest.MonkeyPatch, **env: str) -> str:
    with pytest.raises(SystemExit) as stopped:
        read(monkeypatch, **env)
    said = str(stopped.value)
    assert said.startswith("the site cannot start: "), said
    return said


def test_with_no_variable_set_the_settings_are_the_defaults(bare_env: pytest.MonkeyPatch) -> None:
    settings = read(bare_env)
    assert settings == Settings()
    assert (settings.max_sandboxes, settings.sandbox_ttl, settings.max_body_bytes) == (5000, 3600, 16 * 1024)
    assert (settings.sandbox_bytes, settings.snapshot_bytes) == (1 << 20, 64 * 1024)
    assert (settings.instructor_token, settings.secret, settings.public_origin) == (None, None, None)
    assert settings.secure_cookies is False and settings.trust_forwarded_for is False


def test_each_whole_number_is_read_from_its_own_variable(bare_env: pytest.MonkeyPatch) -> None:
    # 5000 fits every range (max_children and max_flows stop at 1000, presence_ttl at 60) and keeps
    # the sandbox TTL no shorter than the stream's lifetime.
    numbers = [name for name, field in Settings.model_fields.items() if field.annotation in (int, int | None)]
    assert {"max_sandboxes", "rate_limit", "read_limit", "sandbox_bytes", "stream_send_timeout"} <= set(numbers)
    capped = {"max_children": 1000, "max_flows": 1000, "presence_ttl": 60}
    wanted = {name: capped.get(name, 5000) for name in numbers}
    settings = read(bare_env, **{name.upper(): str(value) for name, value in wanted.items()})
    assert {name: getattr(settings, name) for name in numbers} == wanted


@pytest.mark.parametrize("raw", ["lots", "1.5", "1e3", "0x10", "12 units"])
def test_a_value_that_is_not_a_whole_number_stops_the_site_naming_the_variable(
    bare_env: pytest.MonkeyPatch, raw: str
) -> None:
    said = refusal(bare_env, MAX_SANDBOXES=raw)
    assert "EMQLAB_MAX_SANDBOXES" in said and "valid integer" in said


@pytest.mark.parametrize(
    ("name", "raw", "words"),
    [
        ("MAX_CHILDREN", "0", "greater than or equal to 1"),
        ("MAX_CHILDREN", "1001", "less than or equal to 1000"),
        ("MAX_BODY_BYTES", "1023", "greater than or equal to 1024"),
        ("SANDBOX_TTL", "9", "greater than or equal to 10"),
        ("SANDBOX_BYTES", "100", "greater than or equal to 4096"),
        ("RATE_LIMIT", "-1", "greater than or equal to 0"),
        ("STREAM_SEND_TIMEOUT", "0", "greater than or equal to 1"),
    ],
)
def test_a_value_out_of_range_stops_the_site_naming_the_variable_and_the_bound(
    bare_env: pytest.MonkeyPatch, name: str, raw: str, words: str
) -> None:
    said = refusal(bare_env, **{name: raw})
    assert f"EMQLAB_{name}" in said and words in said


def test_every_wrong_variable_is_named_at_once(bare_env: pytest.MonkeyPatch) -> None:
    said = refusal(bare_env, MAX_SANDBOXES="lots", READ_LIMIT="-5")
    assert "EMQLAB_MAX_SANDBOXES" in said and "EMQLAB_READ_LIMIT" in said


def test_the_ends_of_a_range_are_inside_it(bare_env: pytest.MonkeyPatch) -> None:
    settings = read(bare_env, MAX_CHILDREN="1", MAX_FLOWS="1000", MAX_BODY_BYTES="1024")
    assert (settings.max_children, settings.max_flows, settings.max_body_bytes) == (1, 1000, 1024)


@pytest.mark.parametrize(("raw", "value"), [("1", True), ("true", True), ("YES", True), ("on", True),
                                             ("0", False), ("false", False), ("No", False), ("off", False)])
def test_a_yes_or_no_setting_reads_the_usual_words(bare_env: pytest.MonkeyPatch, raw: str, value: bool) -> None:
    assert read(bare_env, SECURE_COOKIES=raw).secure_cookies is value


def test_any_other_word_for_a_yes_or_no_setting_stops_the_site(bare_env: pytest.MonkeyPatch) -> None:
    said = refusal(bare_env, TRUST_FORWARDED_FOR="maybe")
    assert "EMQLAB_TRUST_FORWARDED_FOR" in said and "boolean" in said


@pytest.mark.parametrize(("raw", "said"), [
    ("1", True), ("TRUE", True), (" yes ", True), ("on", True),
    ("0", False), ("false", False), ("No", False), ("off", False),
    ("", None), ("2", None), ("maybe", None),
])
def test_a_form_fields_yes_and_no_words_are_read_one_way(raw: str, said: bool | None) -> None:
    assert truth(raw) is said


def test_an_instructor_token_shorter_than_16_characters_stops_the_site(bare_env: pytest.MonkeyPatch) -> None:
    said = refusal(bare_env, INSTRUCTOR_TOKEN="fifteen-chars!!")
    assert "EMQLAB_INSTRUCTOR_TOKEN" in said and "at least 16 characters" in said
    assert read(bare_env, INSTRUCTOR_TOKEN="sixteen-chars!!!").instructor_token == "sixteen-chars!!!"


def test_a_blank_variable_is_the_default_as_if_unset(bare_env: pytest.MonkeyPatch) -> None:
    """A deployment file that lists a variable with no value (`EMQLAB_INSTRUCTOR_TOKEN=`)
    means "not set": instructors off, the default limit, no secret of its own."""
    settings = read(bare_env, INSTRUCTOR_TOKEN="", ADDRESS_RATE_LIMIT="", MAX_SANDBOXES="", SECRET="")
    assert settings.instructor_token is None and settings.secret in (None, "")
    assert settings.address_rate_limit is None and settings.max_sandboxes == 5000


def test_the_address_and_room_budgets_follow_the_visitors_rate_unless_set(bare_env: pytest.MonkeyPatch) -> None:
    settings = read(bare_env, RATE_LIMIT="7")
    assert (settings.rate_limit, settings.address_actions, settings.room_actions) == (7, 70, 140)
    off = read(bare_env, RATE_LIMIT="0")
    assert (off.address_actions, off.room_actions) == (0, 0)
    own = read(bare_env, RATE_LIMIT="7", ADDRESS_RATE_LIMIT="5", ROOM_RATE_LIMIT="9")
    assert (own.address_actions, own.room_actions) == (5, 9)


def test_the_public_origin_must_be_http_or_https_and_is_compared_without_its_trailing_slash(
    bare_env: pytest.MonkeyPatch,
) -> None:
    assert read(bare_env, PUBLIC_ORIGIN="https://flows.example.org/").origin == "https://flows.example.org"
    said = refusal(bare_env, PUBLIC_ORIGIN="flows.example.org")
    assert "EMQLAB_PUBLIC_ORIGIN" in said


def test_a_sandbox_ttl_shorter_than_a_streams_life_is_refused_naming_both(bare_env: pytest.MonkeyPatch) -> None:
    said = refusal(bare_env, SANDBOX_TTL="60", STREAM_LIFETIME="600")
    assert "EMQLAB_SANDBOX_TTL (60 s) is shorter than EMQLAB_STREAM_LIFETIME (600 s)" in said
    assert read(bare_env, SANDBOX_TTL="600", STREAM_LIFETIME="600").sandbox_ttl == 600


def test_settings_built_in_code_are_checked_the_same_way() -> None:
    with pytest.raises(ValidationError, match="is shorter than EMQLAB_STREAM_LIFETIME"):
        Settings(sandbox_ttl=10, stream_lifetime=600)
    with pytest.raises(SystemExit, match="EMQLAB_MAX_CHILDREN"):
        Settings.from_env(max_children=0)
    assert Settings.from_env(rate_limit=3).rate_limit == 3


def test_settings_cannot_change_once_read() -> None:
    settings = Settings()
    with pytest.raises(ValidationError):
        settings.rate_limit = 1
