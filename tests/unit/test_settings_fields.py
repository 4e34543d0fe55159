"""Settings by their fields: each is read from EMQLAB_<FIELD>, with the default
and range written on the field itself (server/settings.py), and docs/LIMITS.md
names exactly those variables. The values each variable takes are in test_settings.py."""

from __future__ import annotations

import dataclasses
import os
import re
from pathlib import Path

import pytest

from server.settings import Settings, truth

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


def test_each_whole_number_field_is_read_from_its_own_variable(clean_env: pytest.MonkeyPatch) -> None:
    # A value unlike every default and inside every range (the sandbox TTL stays
    # no shorter than the stream's lifetime: both are 5000).
    wanted = {spec.name: spec.metadata["high"] or 5000 for spec in dataclasses.fields(Settings) if spec.type == "int"}
    for name, value in wanted.items():
        clean_env.setenv("EMQLAB_" + name.upper(), str(value))
    settings = Settings.from_env()
    assert {name: getattr(settings, name) for name in wanted} == wanted


@pytest.mark.parametrize(("raw", "said"), [
    ("1", True), ("TRUE", True), (" yes ", True), ("on", True),
    ("0", False), ("false", False), ("No", False), ("off", False),
    ("", None), ("2", None), ("maybe", None),
])
def test_yes_and_no_words_are_read_one_way(raw: str, said: bool | None) -> None:
    assert truth(raw) is said
