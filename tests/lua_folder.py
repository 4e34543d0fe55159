"""A scratch folder of Lua scripts for the registry, shared by the unit and
the integration tests of the include step (the `scripts_dir` fixture in
tests/conftest.py points the registry at one)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from server.emq import registry


def write_script(folder: Path, name: str, text: str) -> None:
    """`<folder>/<name>.lua` holding `text` (folders made as needed)."""
    path = folder / f"{name}.lua"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def registry_reading(folder: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The registry pointed at `folder`, its caches cleared around it."""
    caches = (registry.file_source, registry.script_source, registry.doc, registry.moves, registry.prefix_source)
    monkeypatch.setattr(registry, "SCRIPTS_DIR", folder)
    for cached in caches:
        cached.cache_clear()
    yield folder
    monkeypatch.undo()
    for cached in caches:
        cached.cache_clear()
