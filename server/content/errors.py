"""Errors found loading the course when the site starts, named the way a compiler does
(``site/content/flows/cross-queue.md:42: …``)."""

from __future__ import annotations

from pathlib import Path


class ContentError(Exception):
    """A content file that cannot become a page; ``path`` and ``line`` (1-based) when known."""

    def __init__(self, message: str, line: int | None = None, *, path: str | Path | None = None) -> None:
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line
        if self.path is None:
            super().__init__(message if line is None else f"line {line}: {message}")
        else:
            super().__init__(f"{self.path}: {message}" if line is None else f"{self.path}:{line}: {message}")


class DirectiveError(ContentError):
    """A ``{widget}`` or ``{listing}`` fence is malformed or names something unknown."""


class FrontMatterError(ContentError):
    """The front matter is not the YAML a page needs."""
