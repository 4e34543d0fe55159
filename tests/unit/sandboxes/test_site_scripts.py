"""Each site script is a file with a header naming it (read without Valkey)."""

from __future__ import annotations

import pytest

from server.sandboxes import site_scripts


def test_each_site_script_is_a_file_with_a_header_naming_it() -> None:
    for name in site_scripts.NAMES:
        path = site_scripts.SCRIPTS_DIR / f"{name}.lua"
        assert site_scripts.source(name) == path.read_text(encoding="utf-8")
        assert site_scripts.source(name).startswith(f"-- {name}: ")
    with pytest.raises(KeyError):
        site_scripts.source("../guard")
