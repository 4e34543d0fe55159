"""Where listings read Lua from: the very files the server runs.

The listing directive asks a *script source* for two things:

* ``script_source(stem) -> str`` — the whole file, ``stem`` without ``.lua``;
* ``moves(stem) -> list[Move]`` — the stepper's moves, each with ``number``,
  ``title``, ``first_line`` and ``last_line`` (1-based, inclusive).

In the app this is the host library's registry (``server.emq.registry``),
which loads ``server/emq/scripts/*.lua`` for Valkey. Tests, or any code that
wants another folder, pass a :class:`DirScripts` pointed at it; it reads the
same ``-- @move <n>: <title>`` markers on its own.

Either way the text is the script *as the server runs it*: every
``-- @include <name>`` line expanded (by the host library's include step)
into the helper's lines between a ``-- ▼ included from includes/<name>.lua``
and a ``-- ▲ end of …`` comment, so a listing shows each shared rule where it
runs and its line numbers are those of the registered text.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from server.emq import registry
from server.emq.includes import IncludeError, expand

SCRIPTS_DIR = registry.SCRIPTS_DIR
DISPLAY_DIR = "server/emq/scripts"

Move = registry.Move  # one Move for the registry and the listings


class ScriptMissing(LookupError):
    pass


class ScriptSource(Protocol):
    def script_source(self, stem: str) -> str: ...

    def moves(self, stem: str) -> list[Any]: ...


def cut_moves(source: str) -> list[Move]:
    """Split a script at its ``-- @move`` markers: the host library's one cutter."""
    return list(registry.cut_moves(source))


class DirScripts:
    """Read ``<stem>.lua`` files from one folder (helpers in its ``includes/``)."""

    def __init__(self, directory: str | Path) -> None:
        self.directory = Path(directory)

    def script_source(self, stem: str) -> str:
        path = self.directory / f"{stem}.lua"
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise ScriptMissing(f"no script {path}") from None
        try:
            return expand(f"{stem}.lua", text, self.directory)
        except IncludeError as exc:
            raise ScriptMissing(str(exc)) from None

    def moves(self, stem: str) -> list[Move]:
        return cut_moves(self.script_source(stem))


class RegistryScripts:
    """The host library's registry: the scripts the server registers."""

    def script_source(self, stem: str) -> str:
        try:
            return registry.script_source(stem)
        except IncludeError as exc:
            raise ScriptMissing(str(exc)) from None
        except KeyError as exc:
            raise ScriptMissing(f"no script {stem}.lua in the registry: {exc}") from None

    def moves(self, stem: str) -> list[Any]:
        return list(registry.moves(stem))


def default_scripts() -> ScriptSource:
    """The registry: the files the server runs, includes expanded."""
    return RegistryScripts()
