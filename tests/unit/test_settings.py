"""server/settings.py: every limit from its EMQLAB_ variable, the defaults a
laptop wants, and a refusal at start (naming the variable) for a value that
is not a whole number, not a yes/no, out of range, or at odds with another."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest

from server.settings import Settings


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
    return str(stopped.value)


def test_with_no_variable_set_the_settings_are_the_defaults(bare_env: pytest.MonkeyPatch) -> None:
    settings = read(bare_env)
    assert settings == Settings()
    assert (settings.max_sandboxes, settings.sandbox_ttl, settings.max_body_bytes) == (5000, 3600, 16 * 1024)
    assert (settings.instructor_token, settings.secret, settings.public_origin) == (None, None, None)
    assert settings.secure_cookies is False and settings.trust_forwarded_for is False


def test_a_whole_number_is_read_from_its_variable_and_a_blank_one_is_the_default(bare_env: pytest.MonkeyPatch) -> None:
    assert read(bare_env, MAX_SANDBOXES="7", MAX_KEYS_PER_SANDBOX=" ").max_sandboxes == 7
    assert read(bare_env, MAX_KEYS_PER_SANDBOX="").max_keys_per_sandbox == 2000


@pytest.mark.parametrize("raw", ["lots", "1.5", "1e3", "0x10"])
def test_a_value_that_is_not_a_whole_number_stops_the_site_naming_the_variable(
    bare_env: pytest.MonkeyPatch, raw: str
) -> None:
    assert refusal(bare_env, MAX_SANDBOXES=raw) == f"EMQLAB_MAX_SANDBOXES must be a whole number, got {raw!r}"


@pytest.mark.parametrize(
    ("name", "raw", "sentence"),
    [
        ("MAX_CHILDREN", "0", "EMQLAB_MAX_CHILDREN must be from 1 to 1000, got 0"),
        ("MAX_CHILDREN", "1001", "EMQLAB_MAX_CHILDREN must be from 1 to 1000, got 1001"),
        ("MAX_BODY_BYTES", "1023", "EMQLAB_MAX_BODY_BYTES must be from 1024 to 1048576, got 1023"),
        ("SANDBOX_TTL", "9", "EMQLAB_SANDBOX_TTL must be at least 10, got 9"),
        ("MAX_KEYS_PER_SANDBOX", "49", "EMQLAB_MAX_KEYS_PER_SANDBOX must be at least 50, got 49"),
        ("RATE_LIMIT", "-1", "EMQLAB_RATE_LIMIT must be at least 0, got -1"),
    ],
)
def test_a_value_out_of_range_stops_the_site_saying_the_range(
    bare_env: pytest.MonkeyPatch, name: str, raw: str, sentence: str
) -> None:
    assert refusal(bare_env, **{name: raw}) == sentence


def test_the_ends_of_a_range_are_inside_it(bare_env: pytest.MonkeyPatch) -> None:
    settings = read(bare_env, MAX_CHILDREN="1", MAX_FLOWS="1000", MAX_BODY_BYTES="1024")
    assert (settings.max_children, settings.max_flows, settings.max_body_bytes) == (1, 1000, 1024)


@pytest.mark.parametrize(("raw", "value"), [("1", True), ("true", True), ("YES", True), (" on ", True),
                                             ("0", False), ("false", False), ("No", False), ("off", False)])
def test_a_yes_or_no_setting_reads_the_usual_words(bare_env: pytest.MonkeyPatch, raw: str, value: bool) -> None:
    assert read(bare_env, SECURE_COOKIES=raw).secure_cookies is value


def test_any_other_word_for_a_yes_or_no_setting_stops_the_site(bare_env: pytest.MonkeyPatch) -> None:
    assert refusal(bare_env, TRUST_FORWARDED_FOR="maybe") == (
        "EMQLAB_TRUST_FORWARDED_FOR must be 1 or 0 (true/false), got 'maybe'"
    )


def test_the_address_and_room_budgets_follow_the_visitors_rate_unless_set(bare_env: pytest.MonkeyPatch) -> None:
    settings = read(bare_env, RATE_LIMIT="7")
    assert (settings.rate_limit, settings.address_rate_limit, settings.room_rate_limit) == (7, 70, 140)
    off = read(bare_env, RATE_LIMIT="0")
    assert (off.address_rate_limit, off.room_rate_limit) == (0, 0)
    own = read(bare_env, RATE_LIMIT="7", ADDRESS_RATE_LIMIT="5", ROOM_RATE_LIMIT="9")
    assert (own.address_rate_limit, own.room_rate_limit) == (5, 9)


def test_text_settings_are_read_as_given_and_an_empty_one_is_unset(bare_env: pytest.MonkeyPatch) -> None:
    settings = read(bare_env, INSTRUCTOR_TOKEN="t0ken", SECRET="", STATE_DIR="/tmp/lab")
    assert (settings.instructor_token, settings.secret, settings.state_dir) == ("t0ken", None, "/tmp/lab")


def test_the_public_origin_loses_its_trailing_slash_and_must_be_http_or_https(bare_env: pytest.MonkeyPatch) -> None:
    assert read(bare_env, PUBLIC_ORIGIN="https://flows.example.org/").public_origin == "https://flows.example.org"
    assert refusal(bare_env, PUBLIC_ORIGIN="flows.example.org") == (
        "EMQLAB_PUBLIC_ORIGIN must start with http:// or https://, got 'flows.example.org'"
    )


def test_a_sandbox_ttl_shorter_than_a_streams_life_is_refused_naming_both(bare_env: pytest.MonkeyPatch) -> None:
    sentence = refusal(bare_env, SANDBOX_TTL="60", STREAM_LIFETIME="600")
    assert sentence.startswith("EMQLAB_SANDBOX_TTL (60 s) is shorter than EMQLAB_STREAM_LIFETIME (600 s)")
    assert read(bare_env, SANDBOX_TTL="600", STREAM_LIFETIME="600").sandbox_ttl == 600


def test_settings_built_in_code_are_checked_the_same_way() -> None:
    with pytest.raises(SystemExit, match="is shorter than EMQLAB_STREAM_LIFETIME"):
        Settings(sandbox_ttl=10, stream_lifetime=600).check()
    assert Settings().check() == Settings()
