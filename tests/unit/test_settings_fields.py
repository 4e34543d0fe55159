"""Settings: each field is read from EMQLAB_<FIELD>, with the default and range
written on the field itself (server/settings.py). Pure: no Valkey, no site."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import pytest

from server.settings import ROOM_MEMBERS, Settings, truth

LIMITS = Path(__file__).resolve().parents[2] / "docs" / "LIMITS.md"
# Read outside Settings: the URL by the cli, the cluster switch by valkey/connect.py.
READ_ELSEWHERE = {"EMQLAB_VALKEY_URL", "EMQLAB_VALKEY_CLUSTER"}


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in [n for n in os.environ if n.startswith("EMQLAB_")]:
        monkeypatch.delenv(name)
    return monkeypatch


def test_docs_limits_names_exactly_the_variables_settings_reads() -> None:
    documented = set(re.findall(r"EMQLAB_[A-Z_]+", LIMITS.read_text(encoding="utf-8"))) - READ_ELSEWHERE
    read = {"EMQLAB_" + spec.name.upper() for spec in dataclasses.fields(Settings)}
    assert documented == read


def test_an_empty_environment_gives_every_fields_own_default(clean_env: pytest.MonkeyPatch) -> None:
    assert Settings.from_env() == Settings()


def test_each_whole_number_field_is_read_from_its_own_variable(clean_env: pytest.MonkeyPatch) -> None:
    # A value unlike every default and inside every range (the sandbox TTL stays
    # no shorter than the stream's lifetime: both are 5000).
    wanted = {spec.name: spec.metadata["high"] or 5000 for spec in dataclasses.fields(Settings) if spec.type == "int"}
    for name, value in wanted.items():
        clean_env.setenv("EMQLAB_" + name.upper(), str(value))
    settings = Settings.from_env()
    assert {name: getattr(settings, name) for name in wanted} == wanted


def test_the_address_and_room_rates_follow_the_visitor_rate_when_unset(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("EMQLAB_RATE_LIMIT", "7")
    settings = Settings.from_env()
    assert (settings.address_rate_limit, settings.room_rate_limit) == (70, 7 * ROOM_MEMBERS)
    clean_env.setenv("EMQLAB_ROOM_RATE_LIMIT", "3")
    assert Settings.from_env().room_rate_limit == 3


@pytest.mark.parametrize(("name", "raw", "said"), [
    ("EMQLAB_MAX_FLOWS", "0", "EMQLAB_MAX_FLOWS must be from 1 to 1000, got 0"),
    ("EMQLAB_MAX_FLOWS", "many", "EMQLAB_MAX_FLOWS must be a whole number, got 'many'"),
    ("EMQLAB_SANDBOX_TTL", "9", "EMQLAB_SANDBOX_TTL must be at least 10, got 9"),
    ("EMQLAB_SECURE_COOKIES", "maybe", "EMQLAB_SECURE_COOKIES must be 1 or 0 (true/false), got 'maybe'"),
])
def test_a_bad_value_stops_the_start_with_a_sentence_naming_it(
    clean_env: pytest.MonkeyPatch, name: str, raw: str, said: str
) -> None:
    clean_env.setenv(name, raw)
    with pytest.raises(SystemExit, match=re.escape(said)):
        Settings.from_env()


def test_the_public_origin_loses_its_trailing_slash(clean_env: pytest.MonkeyPatch) -> None:
    clean_env.setenv("EMQLAB_PUBLIC_ORIGIN", "https://flows.example.org/")
    assert Settings.from_env().public_origin == "https://flows.example.org"


@pytest.mark.parametrize(("raw", "said"), [
    ("1", True), ("TRUE", True), (" yes ", True), ("on", True),
    ("0", False), ("false", False), ("No", False), ("off", False),
    ("", None), ("2", None), ("maybe", None),
])
def test_yes_and_no_words_are_read_one_way(raw: str, said: bool | None) -> None:
    assert truth(raw) is said
