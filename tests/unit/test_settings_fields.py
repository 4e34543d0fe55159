"""Settings and their documentation: docs/LIMITS.md names every variable the
site's Settings read, and documents no variable the site does not read."""

from __future__ import annotations

import re
from pathlib import Path

from server.settings import Settings

ROOT = Path(__file__).resolve().parents[2]
LIMITS = ROOT / "docs" / "LIMITS.md"


def documented() -> set[str]:
    return set(re.findall(r"EMQLAB_[A-Z_]*[A-Z]", LIMITS.read_text(encoding="utf-8")))


def read_by_the_code() -> set[str]:
    """Every EMQLAB_ name written in server/ (the cli, the graders' settings, …)."""
    return {name for path in (ROOT / "server").rglob("*.py")
            for name in re.findall(r"EMQLAB_[A-Z_]*[A-Z]", path.read_text(encoding="utf-8"))}


def test_docs_limits_names_every_variable_the_settings_read() -> None:
    read = {"EMQLAB_" + name.upper() for name in Settings.model_fields}
    assert read - documented() == set(), "variables the settings read that docs/LIMITS.md does not name"


def test_docs_limits_names_no_variable_the_site_does_not_read() -> None:
    read = {"EMQLAB_" + name.upper() for name in Settings.model_fields} | read_by_the_code()
    assert documented() - read == set(), "variables docs/LIMITS.md names that nothing reads"
