"""Where listings read Lua from: ``script_source(stem)``, the text as the server runs it (includes
expanded, so line numbers are the registered text's). Tests point :class:`DirScripts` at a folder."""

from __future__ import annotations

from pathlib import Path
from typing import Protocol

from server.emq import registry
from server.emq.includes import IncludeError, expand

DISPLAY_DIR = "server/emq/scripts"


class ScriptMissing(LookupError):
    """No such script, or one whose includes do not expand."""


class ScriptSource(Protocol):
    def script_source(self, stem: str) -> str: ...


class DirScripts:
    """``<stem>.lua`` files of one folder (helpers in its ``includes/``)."""

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


class RegistryScripts:
    """The host library's registry: the scripts the server registers."""

    def script_source(self, stem: str) -> str:
        try:
            return registry.script_source(stem)
        except IncludeError as exc:
            raise ScriptMissing(str(exc)) from None
        except KeyError as exc:
            raise ScriptMissing(f"no script {stem}.lua in the registry: {exc}") from None
